"""How the Buildbot client maps HTTP failures to the provider error hierarchy, against a real HTTP
server on loopback that answers what a struggling master would."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from controller.errors import ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.providers.base import JobRef
from controller.providers.buildbot import BuildbotProvider


class Master(ThreadingHTTPServer):
    status = 200
    body: object = {}
    headers_out: dict[str, str] = {}
    seen: list[str]


class Handler(BaseHTTPRequestHandler):
    server: Master

    def _answer(self) -> None:
        self.server.seen.append(f"{self.command} {self.path}")
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        payload = json.dumps(self.server.body).encode()
        self.send_response(self.server.status)
        for key, value in self.server.headers_out.items():
            self.send_header(key, value)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _answer
    do_POST = _answer

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def master() -> Iterator[Master]:
    server = Master(("127.0.0.1", 0), Handler)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def provider(master: Master) -> BuildbotProvider:
    return BuildbotProvider(f"http://127.0.0.1:{master.server_address[1]}/", timeout_s=2)


@pytest.mark.parametrize(
    ("status", "error"),
    [(503, ProviderUnavailable), (429, ProviderUnavailable), (404, RunnerNotFound), (400, ProviderRejected)],
    ids=["5xx", "429", "404", "400"],
)
def test_status_maps_to_error(master: Master, status: int, error: type[Exception]) -> None:
    master.status = status
    master.headers_out = {"Retry-After": "0"} if status == 429 else {}
    with pytest.raises(error):
        provider(master).state("w1")


def test_unavailable_is_retried_and_carries_retry_after(master: Master) -> None:
    master.status = 429
    master.headers_out = {"Retry-After": "0"}
    with pytest.raises(ProviderUnavailable) as caught:
        provider(master).cordon("w1", "sick")
    assert caught.value.retry_after == 0
    assert len(master.seen) == 4  # the first try and three retries: a pause is safe to repeat


def test_a_rebuild_is_never_retried(master: Master) -> None:
    master.status = 500
    with pytest.raises(ProviderUnavailable):
        provider(master).rerun(JobRef("7"))
    assert master.seen == ["POST /api/v2/builds/7"]


def test_jsonrpc_error_is_a_rejection(master: Master) -> None:
    master.body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "action: nope"}}
    with pytest.raises(ProviderRejected):
        provider(master).cordon("w1", "sick")


def test_credentials_never_in_repr() -> None:
    found = BuildbotProvider("http://127.0.0.1:1/", username="bot", password="s3cret")
    assert "s3cret" not in repr(found) and "s3cret" not in str(vars(found).get("api"))
