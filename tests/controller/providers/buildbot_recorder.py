"""A tiny Buildbot stand-in over real HTTP: the REST reads and JSON-RPC controls BuildbotProvider uses
(workers, builds, pause, unpause, rebuild), answered in Buildbot 4's shapes, with every control recorded.

`hold_rebuilds` makes a rebuild wait (recorded at once, answered only on release), so a test can kill
the controller while the rebuild is in flight.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Recorder:
    url: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)  # (rpc method, worker or build id)
    paused: dict[str, str] = field(default_factory=dict)
    hold_rebuilds: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, method: str, target: str | None = None) -> int:
        with self.lock:
            return sum(1 for m, t in self.calls if m == method and (target is None or t == target))

    def targets(self, method: str) -> list[str]:
        with self.lock:
            return [t for m, t in self.calls if m == method]

    def worker(self, name: str) -> dict[str, Any]:
        with self.lock:
            reason = self.paused.get(name)
        return {
            "workerid": abs(hash(name)) % 10_000,
            "name": name,
            "paused": reason is not None,
            "graceful": False,
            "pause_reason": reason,
            "connected_to": [{"masterid": 1}],
        }

    def control(self, path: str, body: dict[str, Any]) -> Any:
        target = path.partition("/")[2]
        method = body.get("method", "")
        with self.lock:
            self.calls.append((method, target))
            if method == "pause":
                self.paused[target] = body.get("params", {}).get("reason", "")
            elif method == "unpause":
                self.paused.pop(target, None)
            number = len(self.calls)
        if method == "rebuild" and self.hold_rebuilds.is_set():
            self.release.wait(timeout=120)
        return [1000 + number, {"1": 2000 + number}] if method == "rebuild" else None


class _Handler(BaseHTTPRequestHandler):
    recorder: Recorder

    def log_message(self, *_args: Any) -> None:
        pass

    def _answer(self, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the controller that asked was killed meanwhile
            self.wfile.write(data)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path = parts.path.removeprefix("/api/v2/")
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if path.startswith("workers/"):
            self._answer({"workers": [self.recorder.worker(path.partition("/")[2])]})
        elif path == "builds" and "workerid" in query:
            self._answer({"builds": []})  # idle: nothing running
        else:
            self._answer({"builds": []})  # a rebuild not started yet: pending

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        path = urlsplit(self.path).path.removeprefix("/api/v2/")
        result = self.recorder.control(path, body)
        self._answer({"jsonrpc": "2.0", "result": result, "id": body.get("id")})


@contextmanager
def buildbot_recorder() -> Iterator[Recorder]:
    recorder = Recorder()
    handler = type("Handler", (_Handler,), {"recorder": recorder})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    recorder.url = f"http://127.0.0.1:{server.server_address[1]}/"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        recorder.release.set()
        server.shutdown()
        server.server_close()
