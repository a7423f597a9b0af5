"""A real HTTP controller stand-in on loopback for the agent's reliability tests.

It implements the `POST /v1/reports` contract (bearer token, ReportBatch validation, dedupe by
(agent_id, boot_id, seq), `{"accepted", "new", "duplicate"}`) and faults a test can switch on: down
(nothing listening), 500/503 answers, slow answers that outlast the client's timeout after storing
(a lost acknowledgement), 413 above a batch size, 422 for a marked report.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import ValidationError

from common.reports import ReportBatch


@dataclass
class Faults:
    status: int | None = None  # answer this status instead of storing
    status_ratio: float = 0.0  # ... on this share of requests (0 = never, 1 = always)
    statuses: tuple[int, ...] = (500, 503)  # picked from when status_ratio applies
    slow_s: float = 0.0  # sleep after storing: the client times out and resends
    slow_ratio: float = 0.0
    max_batch: int | None = None  # 413 above this many reports
    reject_marker: str | None = None  # 422 when a report's runner.labels contains this


@dataclass
class Store:
    reports: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)
    posts: int = 0
    duplicates: int = 0
    conflicts: int = 0  # same (agent_id, boot_id, seq) with a different body: a reused sequence number
    in_flight: int = 0  # requests stored and now sleeping before their answer
    statuses: list[int] = field(default_factory=list)

    def seqs(self, agent_id: str | None = None) -> list[int]:
        return sorted(k[2] for k in self.reports if agent_id is None or k[0] == agent_id)


class Sink:
    def __init__(self, token: str = "sink-token", port: int = 0) -> None:
        self.token = token
        self.faults = Faults()
        self.store = Store()
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = port
        self.rng = random.Random(1234)
        self._faulted = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                status, payload, delay = sink.handle(self.path, self.headers.get("Authorization"), body)
                if delay:
                    with sink.lock:
                        sink.store.in_flight += 1
                    time.sleep(delay)
                    with sink.lock:
                        sink.store.in_flight -= 1
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout): exactly the case being tested

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Down: nothing listens on the port until `start()` again."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def handle(self, path: str, auth: str | None, body: bytes) -> tuple[int, dict[str, Any], float]:
        with self.lock:
            self.store.posts += 1
            f = self.faults
            if path != "/v1/reports":
                return self._answer(404, {"detail": "not found"})
            if auth != f"Bearer {self.token}":
                return self._answer(401, {"detail": "bad token"})
            if f.status is not None:
                return self._answer(f.status, {"detail": "fault"})
            if f.status_ratio and self.rng.random() < f.status_ratio:
                self._faulted += 1  # cycle through the statuses so every one of them shows up
                return self._answer(f.statuses[self._faulted % len(f.statuses)], {"detail": "fault"})
            try:
                raw = json.loads(body)
                batch = ReportBatch.model_validate(raw)
            except (ValueError, ValidationError) as exc:
                return self._answer(422, {"detail": str(exc)[:500]})
            if f.max_batch is not None and len(batch.reports) > f.max_batch:
                return self._answer(413, {"detail": "too large"})
            if f.reject_marker and any(f.reject_marker in r.runner.labels for r in batch.reports):
                return self._answer(422, {"detail": [{"loc": ["body", "reports"], "msg": "rejected"}]})
            new, dup = [], []
            for report, raw_report in zip(batch.reports, raw["reports"], strict=True):
                key = (report.agent_id, report.boot_id, report.seq)
                if key in self.store.reports:
                    dup.append(report.seq)
                    self.store.duplicates += 1
                    if self.store.reports[key] != raw_report:
                        self.store.conflicts += 1
                else:
                    self.store.reports[key] = raw_report
                    new.append(report.seq)
            delay = f.slow_s if f.slow_s and (f.slow_ratio >= 1 or self.rng.random() < f.slow_ratio) else 0.0
            self.store.statuses.append(200)
            return 200, {"accepted": len(batch.reports), "new": new, "duplicate": dup}, delay

    def _answer(self, status: int, payload: dict[str, Any]) -> tuple[int, dict[str, Any], float]:
        self.store.statuses.append(status)
        return status, payload, 0.0


@contextmanager
def running_sink(token: str = "sink-token") -> Iterator[Sink]:
    sink = Sink(token)
    sink.start()
    try:
        yield sink
    finally:
        sink.stop()
