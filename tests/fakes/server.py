"""What the provider fakes share: a real HTTP server on loopback that routes by method and path pattern,
records every request, and can be told to fail the next matching requests (429, 5xx) with headers."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # percent-decoded
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def arg(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else None

    def call(self) -> str:
        """`METHOD /path` — what tests compare against."""
        return f"{self.method} {self.path}"


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status, json.dumps(payload).encode(), {"Content-Type": "application/json"} | (headers or {})
    )


Handler = Callable[[Request, re.Match[str]], Response]


@dataclass
class Failure:
    method: str
    pattern: re.Pattern[str]
    response: Response
    times: int


class FakeServer:
    """Subclasses register routes (`route(method, regex, handler)`); handlers run under `self.lock`."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.requests: list[Request] = []
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._failures: list[Failure] = []
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    # -- set-up ---------------------------------------------------------------------------------------

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        self._routes.append((method, re.compile(pattern + r"/?$"), handler))

    def fail_next(self, method: str, pattern: str, response: Response, times: int = 1) -> None:
        """Answer the next `times` requests matching method and path with `response` instead."""
        with self.lock:
            self._failures.append(Failure(method, re.compile(pattern + r"/?$"), response, times))

    def start(self) -> None:
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Request(
                    method=self.command,
                    path=unquote(parts.path),
                    query=parse_qs(parts.query, keep_blank_values=True),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                response = fake.dispatch(request)
                self.send_response(response.status)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(response.body)))
                self.end_headers()
                self.wfile.write(response.body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def log_message(self, *_args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name=type(self).__name__, daemon=True
        ).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # -- serving --------------------------------------------------------------------------------------

    def dispatch(self, request: Request) -> Response:
        with self.lock:
            self.requests.append(request)
            for failure in self._failures:
                if (
                    failure.times > 0
                    and failure.method == request.method
                    and failure.pattern.match(request.path)
                ):
                    failure.times -= 1
                    return failure.response
            allowed = []
            for method, pattern, handler in self._routes:
                found = pattern.match(request.path)
                if found is None:
                    continue
                if method != request.method:
                    allowed.append(method)
                    continue
                denied = self.authenticate(request)
                return denied or handler(request, found)
            if allowed:
                return Response(405, b"Method Not Allowed", {"Allow": ", ".join(allowed)})
            return self.not_found(request)

    def authenticate(self, request: Request) -> Response | None:
        """None to let the request through; subclasses check their provider's credentials."""
        return None

    def not_found(self, request: Request) -> Response:
        return Response(404, b"Not Found")

    # -- what tests read ------------------------------------------------------------------------------

    def calls(
        self, *, methods: tuple[str, ...] = ("POST", "PUT", "PATCH", "DELETE"), under: str = ""
    ) -> list[str]:
        """`METHOD /path` of every recorded request (writes only, by default), in order."""
        with self.lock:
            return [r.call() for r in self.requests if r.method in methods and r.path.startswith(under)]

    def wait_for(self, what: str, done: Callable[[], Any], timeout: float = 20) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = done()
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; calls: {self.calls()}")
