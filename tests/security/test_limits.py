"""Oversized bodies and slow clients against a real `runner-controller serve`: refused early, cut off
by deadlines, and never in the way of other requests."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from tests.servers import Controller, running_controller

LIMIT = 64 * 1024
HEADER_TIMEOUT_S = 1.0
REQUEST_TIMEOUT_S = 3.0
LINGER_S = 2.0  # controller/server.py


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    env = {
        "RUNNER_CONTROLLER_MAX_BODY_BYTES": str(LIMIT),
        "RUNNER_CONTROLLER_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
        "RUNNER_CONTROLLER_REQUEST_TIMEOUT_S": str(REQUEST_TIMEOUT_S),
    }
    with running_controller(tmp_path_factory.mktemp("strict"), env=env) as controller:
        yield controller


def connect(controller: Controller) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", controller.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def head(method: str, path: str, token: str | None, *extra: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", *extra]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_answer(sock: socket.socket) -> tuple[int, dict[str, object]]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before an answer: {data!r}"
        data += chunk
    header, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in header.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return int(header.split()[1]), json.loads(body[:length])


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True if the server closes the connection within `seconds` (whatever it sends first)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
    return False


@pytest.mark.parametrize(
    "path", ["/v1/results", "/v1/reports", "/v1/runners/r1/cordon", "/v1/webhooks/buildbot"]
)
def test_a_declared_oversized_body_is_refused_before_it_is_sent(strict: Controller, path: str) -> None:
    for token in (strict.admin_token, None):
        with connect(strict) as sock:
            started = time.monotonic()
            sock.sendall(head("POST", path, token, f"Content-Length: {1 << 30}"))
            status, body = read_answer(sock)
            assert status == 413
            assert body["detail"] == (
                f"request body exceeds the limit of {LIMIT} bytes; split it into smaller batches"
            )
            assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("path", ["/v1/results", "/v1/runners/r1/cordon", "/v1/webhooks/buildbot"])
def test_an_endless_chunked_body_is_cut_off_at_the_limit(strict: Controller, path: str) -> None:
    """No Content-Length: the answer comes as soon as the limit is crossed, and the connection is
    closed a little later although the client goes on sending."""
    answer: list[tuple[int, dict[str, object]]] = []
    with connect(strict) as sock:
        sock.sendall(head("POST", path, strict.admin_token, "Transfer-Encoding: chunked"))
        reader = threading.Thread(target=lambda: answer.append(read_answer(sock)), daemon=True)
        reader.start()
        chunk = b"2000\r\n" + b" " * 0x2000 + b"\r\n"
        sent, answered_after, closed_at = 0, None, None
        started = time.monotonic()
        while time.monotonic() - started < LINGER_S + 5:
            if answer and answered_after is None:
                answered_after, answered_at = sent, time.monotonic()
            try:
                sock.sendall(chunk)
            except OSError:  # reset or broken pipe: the server hung up
                closed_at = time.monotonic()
                break
            sent += len(chunk)
            time.sleep(0.001)
    assert answer and answer[0][0] == 413, answer
    assert f"limit of {LIMIT} bytes" in str(answer[0][1]["detail"])
    assert answered_after is not None and closed_at is not None
    # Loopback buffers hold a few MiB: the answer comes long before the client could send 16 MiB.
    assert answered_after < 8 * 1024 * 1024
    assert closed_at - answered_at < LINGER_S + 1.5


def test_an_anonymous_body_is_not_read_either(strict: Controller) -> None:
    with connect(strict) as sock:
        sock.sendall(head("POST", "/v1/results", None, "Transfer-Encoding: chunked"))
        status, body = read_answer(sock)
        assert status == 401, body
        assert closed_within(sock, LINGER_S + 1.0)


def slow_request(
    controller: Controller, prefix: bytes, payload: bytes, pause_s: float
) -> tuple[float, bytes]:
    """Send prefix at once, then payload a byte at a time; return when the server answered or closed,
    and what it sent."""
    with connect(controller) as sock:
        sock.settimeout(pause_s)
        started = time.monotonic()
        sock.sendall(prefix)
        received = b""
        for byte in payload:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            try:
                got = sock.recv(65536)
                received += got
                if not got:
                    break
            except TimeoutError:
                continue
            except ConnectionResetError:
                break
        return time.monotonic() - started, received


def test_slow_clients_are_cut_off_and_block_nobody(strict: Controller) -> None:
    slow_head = (b"", head("GET", "/v1/runners", strict.admin_token))
    slow_body = (head("POST", "/v1/results", strict.admin_token, "Content-Length: 2000"), b"[" + b" " * 1999)
    outcomes: dict[str, list[tuple[float, bytes]]] = {"head": [], "body": []}

    def run(kind: str, prefix: bytes, payload: bytes) -> None:
        outcomes[kind].append(slow_request(strict, prefix, payload, 0.05))

    slow = [threading.Thread(target=run, args=("head", *slow_head)) for _ in range(10)]
    slow += [threading.Thread(target=run, args=("body", *slow_body)) for _ in range(10)]
    for thread in slow:
        thread.start()
    latencies = []
    while any(thread.is_alive() for thread in slow):
        started = time.monotonic()
        assert (
            requests.get(strict.url + "/v1/analysis", headers=strict.headers(), timeout=5).status_code == 200
        )
        latencies.append(time.monotonic() - started)
        time.sleep(0.05)
    for thread in slow:
        thread.join()
    for kind, limit in (("head", HEADER_TIMEOUT_S), ("body", REQUEST_TIMEOUT_S)):
        for elapsed, received in outcomes[kind]:
            assert received.startswith(b"HTTP/1.1 408 Request Timeout"), (kind, received)
            assert b"request not received in time" in received
            assert limit - 0.2 < elapsed < limit + 1.0, (kind, elapsed)
    # Served throughout, and none waited for a slow client: one that did would have taken until that
    # client's deadline. (How fast each answer came on a busy machine is not this test's business.)
    assert len(latencies) > 10 and max(latencies) < REQUEST_TIMEOUT_S - 0.5, latencies


def test_a_silent_connection_is_closed(strict: Controller) -> None:
    with connect(strict) as sock:
        started = time.monotonic()
        assert closed_within(sock, HEADER_TIMEOUT_S + 1.0)
        assert time.monotonic() - started > HEADER_TIMEOUT_S - 0.2


def test_endless_headers_are_refused(strict: Controller) -> None:
    """h11 refuses a header block still incomplete past 16 KiB (one that arrives whole in a single read
    of the socket may be larger: at most the 256 KiB asyncio reads at a time)."""
    with connect(strict) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        sock.settimeout(0.02)
        sent, received = 0, b""
        while not received and sent < 1024 * 1024:
            try:
                sock.sendall(f"X-Padding-{sent}: {'x' * 4000}\r\n".encode())
            except OSError:
                break
            sent += 4000
            try:
                received = sock.recv(65536)
            except TimeoutError:
                continue
    assert received.startswith(b"HTTP/1.1 400 "), received
    assert sent < 64 * 1024


def test_keep_alive_and_normal_uploads_still_work(strict: Controller) -> None:
    with requests.Session() as session:
        for _ in range(2):
            response = session.post(
                strict.url + "/v1/results",
                headers=strict.headers(),
                json=[
                    {
                        "test_id": "t",
                        "outcome": "passed",
                        "time": "2026-09-21T10:00:00Z",
                        "runner": {"id": "r"},
                    }
                ],
                timeout=10,
            )
            assert response.status_code == 200
            time.sleep(HEADER_TIMEOUT_S + 0.2)  # idle between requests longer than the header deadline


def test_defaults() -> None:
    from controller.settings import ControllerSettings

    settings = ControllerSettings()
    assert (settings.header_timeout_s, settings.request_timeout_s) == (10.0, 60.0)
