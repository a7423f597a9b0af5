"""A tiny HTTP server on loopback that records every request, standing in for the controller in e2e tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    query: dict[str, str]  # the last value of each parameter
    headers: dict[str, str]  # names lower-cased
    body: bytes


class Receiver:
    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._received: list[Received] = []

    def record(self, item: Received) -> None:
        with self._lock:
            self._received.append(item)

    def received(self, path: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self._received if path is None or r.path == path]

    def wait_for(self, match: Callable[[Received], bool], timeout: float = 30) -> Received:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for item in self.received():
                if match(item):
                    return item
            time.sleep(0.05)
        seen = [(r.method, r.path) for r in self.received()]
        raise TimeoutError(f"no matching request in {timeout:.0f} s; got {seen}")


@contextmanager
def http_receiver() -> Iterator[Receiver]:
    """Serve on a free 127.0.0.1 port; every request is answered 200 `{}` and recorded."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            receiver.record(
                Received(
                    method=self.command,
                    path=parts.path,
                    query={k: v[-1] for k, v in parse_qs(parts.query).items()},
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_POST = do_PUT = do_GET = _handle

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver = Receiver(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
