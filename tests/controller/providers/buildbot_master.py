"""A small Buildbot master on loopback: the REST and JSON-RPC shapes controller/providers/buildbot.py
uses, with state (paused workers, queued rebuilds) and scripted faults.

A fault answers one matching request with a status (and Retry-After) or a delay past the client's
timeout, either before the master acts (the request was refused) or after (the master acted and the
answer was lost) — the case that decides whether a retry is safe. `effects` records every change the
master made, so a test can count pauses and rebuilds that really happened.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Fault:
    method: str  # GET or POST
    path: str  # a regex searched in the path, e.g. r"workers/w1$" or r"builds/17$"
    status: int = 503
    delay_s: float = 0.0  # sleep before answering: past the client's read timeout, the answer is lost
    after: bool = False  # act first, then fail: the change is made but the client does not learn it
    retry_after: str | None = None
    rpc: str | None = None  # only this JSON-RPC method (pause, unpause, rebuild)
    times: int = 1
    body: object = None  # what to answer; default an error object naming the fault


@dataclass
class State:
    workers: dict[str, dict[str, Any]] = field(default_factory=dict)
    builds: dict[int, dict[str, Any]] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)
    next_request: int = 1000
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_worker(self, name: str) -> None:
        self.workers[name] = {
            "workerid": len(self.workers) + 1,
            "name": name,
            "paused": False,
            "graceful": False,
            "pause_reason": None,
            "connected_to": [{"masterid": 1}],
        }

    def count(self, effect: str) -> int:
        return sum(1 for e in self.effects if e == effect)


class Master(ThreadingHTTPServer):
    daemon_threads = True
    state: State

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class Handler(BaseHTTPRequestHandler):
    server: Master

    def do_GET(self) -> None:
        self._handle("GET", None)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self._handle("POST", body)

    def _handle(self, method: str, body: dict[str, Any] | None) -> None:
        state = self.server.state
        path = urlsplit(self.path).path.removeprefix("/api/v2/")
        rpc = (body or {}).get("method")
        with state.lock:
            state.seen.append(f"{method} {path}" + (f" {rpc}" if rpc else ""))
            fault = next(
                (
                    f
                    for f in state.faults
                    if f.times > 0
                    and f.method == method
                    and re.search(f.path, path)
                    and (f.rpc is None or f.rpc == rpc)
                ),
                None,
            )
            if fault is not None:
                fault.times -= 1
            if fault is None or fault.after:
                status, answer = self._route(method, path, body)
        if fault is None:
            self._send(status, answer)
            return
        if fault.delay_s:
            time.sleep(fault.delay_s)
        headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
        try:
            answer = fault.body if fault.body is not None else {"error": f"injected HTTP {fault.status}"}
            self._send(fault.status, answer, headers)
        except OSError:
            pass  # the client gave up waiting: exactly what a lost answer is

    def _route(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, object]:
        state = self.server.state
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
        if found := re.fullmatch(r"workers/([^/]+)", path):
            worker = state.workers.get(found[1])
            if method == "GET":
                return 200, {"workers": [worker] if worker else []}
            if worker is None:
                return 404, {"error": "no such worker"}
            return 200, self._worker_rpc(worker, body or {})
        if path == "builds" and "workerid" in query:
            return 200, {"builds": []}  # idle: nothing running on any worker
        if path == "builds" and "buildrequestid" in query:
            request = int(query["buildrequestid"])
            return 200, {"builds": [b for b in state.builds.values() if b["buildrequestid"] == request]}
        if found := re.fullmatch(r"builds/([^/]+)", path):
            if method == "GET":
                return 200, {"builds": []}
            return 200, self._rebuild(found[1])
        return 404, {"error": f"no route {method} {path}"}

    def _worker_rpc(self, worker: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        state = self.server.state
        method = body.get("method")
        if method == "pause" and not worker["paused"]:
            worker["paused"], worker["pause_reason"] = True, body.get("params", {}).get("reason")
            state.effects.append(f"pause {worker['name']}")
        elif method == "unpause" and worker["paused"]:
            worker["paused"], worker["pause_reason"] = False, None
            state.effects.append(f"unpause {worker['name']}")
        elif method not in ("pause", "unpause"):
            return {"jsonrpc": "2.0", "id": body.get("id"), "error": {"code": -32601, "message": "no method"}}
        return {"jsonrpc": "2.0", "id": body.get("id"), "result": None}

    def _rebuild(self, build: str) -> dict[str, Any]:
        """Queue a rebuild; it finishes at once on another worker, and passes."""
        state = self.server.state
        state.next_request += 1
        request = state.next_request
        state.builds[request] = {
            "buildid": request + 50_000,
            "buildrequestid": request,
            "complete": True,
            "results": 0,
            "properties": {"workername": ["healthy-worker", "Worker"]},
        }
        state.effects.append(f"rebuild {build}")
        return {"jsonrpc": "2.0", "id": 1, "result": [request + 90_000, {"1": request}]}

    def _send(self, status: int, answer: object, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(answer).encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_args: object) -> None:
        pass


@contextmanager
def running_master(workers: tuple[str, ...] = ()) -> Iterator[Master]:
    server = Master(("127.0.0.1", 0), Handler)
    server.state = State()
    for name in workers:
        server.state.add_worker(name)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
