"""What the provider fakes share: a real HTTP server on loopback with a route table, a record of every
request it answered, and signed webhook deliveries to the controller.

A fake answers with the status codes and bodies its provider publishes; tests assert the exact calls a
controller made (`calls()`), the way they would read a provider's audit log.
"""

from __future__ import annotations

import json
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import requests


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes

    def form(self) -> dict[str, Any]:
        """The body as the provider would read it: JSON, or a form (`--form` in the docs' curl)."""
        if not self.body:
            return {}
        if self.headers.get("content-type", "").startswith("application/json"):
            found: dict[str, Any] = json.loads(self.body)
            return found
        return dict(parse_qsl(self.body.decode()))


@dataclass
class Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request, re.Match[str]], Reply]


@dataclass(frozen=True)
class Delivery:
    """A webhook the fake sent, and what the controller answered."""

    event: str
    headers: dict[str, str]
    body: bytes
    status: int
    answer: Any


class FakeServer:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self.requests: list[Request] = []
        self.deliveries: list[Delivery] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        # Deliveries go out in order from their own thread, as a provider's do: a slow receiver delays
        # webhooks, never the jobs.
        self._outbox: queue.Queue[tuple[str, str, dict[str, str], bytes] | None] = queue.Queue()
        self._sender = threading.Thread(target=self._send_forever, name="fake-provider-webhooks", daemon=True)

    # -- routes and the record ------------------------------------------------------------------------

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        self.routes.append((method, re.compile(pattern + r"\Z"), handler))

    def calls(self, *methods: str, prefix: str = "") -> list[str]:
        """`"PUT /repos/o/r/actions/runners/3/labels"`, in order; only writes unless methods are named."""
        wanted = methods or ("POST", "PUT", "PATCH", "DELETE")
        with self.lock:
            return [
                f"{r.method} {r.path}"
                for r in self.requests
                if r.method in wanted and r.path.startswith(prefix)
            ]

    def bodies(self, method: str, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r.form() for r in self.requests if r.method == method and r.path == path]

    def dispatch(self, request: Request) -> Reply:
        with self.lock:
            self.requests.append(request)
            for method, pattern, handler in self.routes:
                match = pattern.match(request.path)
                if match and method == request.method:
                    return handler(request, match)
        return self.not_found(request)

    def not_found(self, request: Request) -> Reply:
        return Reply(404, {"message": "Not Found"})

    # -- lifecycle ------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=dict(parse_qsl(parts.query)),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = fake.dispatch(request)
                data = b"" if reply.body is None else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                if data:
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the record of requests is the log

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-provider", daemon=True
        )
        self._thread.start()
        self._sender.start()

    def tick(self) -> None:
        """One step of the provider's own work (start queued jobs, finish running ones)."""

    def _tick_forever(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            self.tick()

    def start_ticking(self, interval_s: float = 0.05) -> None:
        self._ticker = threading.Thread(
            target=self._tick_forever, args=(interval_s,), name="fake-provider-jobs", daemon=True
        )
        self._ticker.start()

    def stop(self) -> None:
        self._stop.set()
        self._outbox.put(None)
        if self._ticker is not None:
            self._ticker.join(timeout=10)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- webhooks -------------------------------------------------------------------------------------

    def send_webhook(self, url: str, event: str, headers: dict[str, str], body: bytes) -> None:
        self._outbox.put((url, event, headers, body))

    def wait_delivered(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self._outbox.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not self._outbox.unfinished_tasks, "webhooks still waiting to be delivered"

    def _send_forever(self) -> None:
        while (item := self._outbox.get()) is not None:
            try:
                self._post(*item)
            finally:
                self._outbox.task_done()
        self._outbox.task_done()

    def _post(self, url: str, event: str, headers: dict[str, str], body: bytes) -> None:
        try:
            response = requests.post(url, data=body, headers=headers, timeout=30)
            try:
                answer: Any = response.json()
            except ValueError:
                answer = response.text
            delivery = Delivery(event, headers, body, response.status_code, answer)
        except requests.RequestException as error:  # the controller was down: the provider logs it
            delivery = Delivery(event, headers, body, 0, str(error))
        with self.lock:
            self.deliveries.append(delivery)
