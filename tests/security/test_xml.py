"""Hostile JUnit XML against a real `runner-controller serve`: refused with a 400 naming the problem,
nothing fetched or stored, and the process' peak memory bounded (measured from /proc)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from sqlalchemy import select

from controller.db import tables
from controller.ingest.junit import MAX_DEPTH, MAX_TAG_BYTES
from tests.servers import Controller, database, running_controller

LIMIT = 4 * 1024 * 1024
# The body itself is held (and joined) while parsed: a few times LIMIT is what a legal upload costs.
PEAK_GROWTH_BOUND = 8 * LIMIT
ATTACKS = Path(__file__).parents[1] / "fixtures" / "junit" / "attacks"
ENTITIES = "JUnit XML rejected: XML entities are not allowed (DTD or ENTITY declaration found)"
CANARY = "canary-3f1c9e"


@pytest.fixture(scope="module")
def xml_controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    env = {"RUNNER_CONTROLLER_MAX_BODY_BYTES": str(LIMIT), "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0"}
    with running_controller(tmp_path_factory.mktemp("xml"), env=env) as controller:
        yield controller


class Listener:
    """A loopback TCP port that records whether anything connected to it (an XXE fetch would)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.close()


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("secret") / "secret.txt"
    path.write_text(CANARY)
    return path


def suite(body: str) -> bytes:
    return f'<testsuites><testsuite name="s">{body}</testsuite></testsuites>'.encode()


def doctype(declarations: str, body: str) -> bytes:
    return f"<?xml version='1.0'?><!DOCTYPE testsuites [{declarations}]>".encode() + suite(body)


def quadratic() -> bytes:
    entity = "A" * 100_000
    refs = "&a;" * ((LIMIT - 200_000) // 3)
    return doctype(f'<!ENTITY a "{entity}">', f'<testcase name="t"><failure>{refs}</failure></testcase>')


def many_attributes() -> bytes:
    attributes = " ".join(f'a{i}=""' for i in range((LIMIT - 200) // 12))
    return suite(f'<testcase name="t" {attributes}/>')


def deep() -> bytes:
    depth = (LIMIT - 100) // 7  # "<x>" + "</x>" per level
    return b"<testsuites>" + b"<x>" * depth + b"</x>" * depth + b"</testsuites>"


# name → (payload maker, expected status, expected start of detail)
CASES: dict[str, tuple[Callable[[Listener, Path], bytes], int, str]] = {
    **{
        f"fixture {name}": ((lambda n: lambda _l, _s: (ATTACKS / n).read_bytes())(name), 400, ENTITIES)
        for name in (
            "billion_laughs.xml",
            "quadratic_blowup.xml",
            "external_entity_file.xml",
            "external_entity_http.xml",
            "external_parameter_entity.xml",
            "dtd.xml",
        )
    },
    "quadratic blowup at the size limit": (lambda _l, _s: quadratic(), 400, ENTITIES),
    "external entity (file)": (
        lambda _l, secret: doctype(
            f'<!ENTITY x SYSTEM "file://{secret}">', '<testcase name="t"><failure message="&x;"/></testcase>'
        ),
        400,
        ENTITIES,
    ),
    "external entity (network)": (
        lambda listen, _s: doctype(
            f'<!ENTITY x SYSTEM "http://127.0.0.1:{listen.port}/x">',
            '<testcase name="t"><failure>&x;</failure></testcase>',
        ),
        400,
        ENTITIES,
    ),
    "external DTD (network)": (
        lambda listen, _s: (
            f'<!DOCTYPE testsuites SYSTEM "http://127.0.0.1:{listen.port}/junit.dtd">'.encode()
            + suite('<testcase name="t"/>')
        ),
        400,
        ENTITIES,
    ),
    "deep nesting": (
        lambda _l, _s: deep(),
        400,
        f"JUnit XML rejected: elements nest deeper than {MAX_DEPTH} levels",
    ),
    "huge attribute": (
        lambda _l, _s: suite(f'<testcase name="t" classname="{"c" * (LIMIT - 200)}"/>'),
        400,
        f"JUnit XML rejected: the start tag of <testcase> on line 1 is longer than {MAX_TAG_BYTES} bytes",
    ),
    "many attributes": (
        lambda _l, _s: many_attributes(),
        400,
        f"JUnit XML rejected: the start tag of <testcase> on line 1 is longer than {MAX_TAG_BYTES} bytes",
    ),
    "huge failure text": (
        lambda _l, _s: suite(f'<testcase name="t"><failure>{"x" * (LIMIT - 200)}</failure></testcase>'),
        200,
        "",
    ),
    "xinclude is inert": (
        lambda _l, secret: suite(
            '<testcase name="t"><failure xmlns:xi="http://www.w3.org/2001/XInclude">'
            f'<xi:include href="file://{secret}" parse="text"/></failure></testcase>'
        ),
        200,
        "",
    ),
}


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


def reset_peak(pid: int) -> None:
    """Linux resets VmHWM to the current RSS on writing 5 to clear_refs. Where that is not allowed the
    peak since start counts instead, which only makes the bound stricter."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_xml(xml_controller: Controller, listener: Listener, secret_file: Path, name: str) -> None:
    maker, status, detail = CASES[name]
    payload = maker(listener, secret_file)
    assert len(payload) <= LIMIT
    assert xml_controller.process is not None
    process = psutil.Process(xml_controller.process.pid)
    before_results = xml_controller.count("results")
    rss = process.memory_info().rss
    reset_peak(process.pid)
    started = time.monotonic()
    response = xml_controller.post(
        "/v1/results/junit?runner_id=evil-01", data=payload, headers={"Content-Type": "application/xml"}
    )
    elapsed = time.monotonic() - started
    growth = peak_rss(process.pid) - rss
    assert response.status_code == status, response.text[:500]
    if detail:
        assert response.json()["detail"].startswith(detail), response.text[:500]
        assert xml_controller.count("results") == before_results
    assert CANARY not in response.text
    assert listener.connections == 0, "the parser fetched an external resource"
    print(f"{name}: {response.status_code} in {elapsed:.2f} s, peak RSS +{growth / 2**20:.1f} MiB")
    assert elapsed < 10, f"{name} took {elapsed:.1f} s"
    assert growth < PEAK_GROWTH_BOUND, f"{name}: peak RSS grew {growth / 2**20:.1f} MiB"


def test_nothing_hostile_was_stored(xml_controller: Controller) -> None:
    with database(xml_controller.db) as conn:
        messages = [m or "" for m in conn.execute(select(tables.results.c.message)).scalars()]
    assert all(CANARY not in message for message in messages)
    assert all(len(message) <= 4000 for message in messages)
