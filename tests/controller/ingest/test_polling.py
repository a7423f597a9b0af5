"""The polling loop over a real database and the real Jenkins client against the fake Jenkins: a poll
that fails keeps its cursor and stores nothing; the next one catches up, once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from controller.db.schema import migrate
from controller.ingest.polling import Polling
from controller.ingest.service import Ingest
from controller.metrics import Metrics
from controller.providers.jenkins import JenkinsProvider
from tests.fakes.jenkins import FakeJenkins
from tests.fakes.server import Response
from tests.servers import count_rows


@pytest.fixture
def fake() -> Iterator[FakeJenkins]:
    server = FakeJenkins("bot", "token", "password")
    server.start()
    server.add_node("linux-01")
    server.add_job("app-tests", ["tests.test_io.test_read", "tests.test_io.test_write"])
    yield server
    server.stop()


def test_a_failed_poll_keeps_its_cursor_and_the_next_catches_up(fake: FakeJenkins, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'controller.db'}"
    engine = create_engine(db)
    migrate(engine)
    ingest = Ingest(engine, Metrics())
    jenkins = JenkinsProvider(fake.url, jobs=["app-tests"], username="bot", api_token="token", timeout_s=2)
    settled: list[tuple[str, str]] = []
    polling = Polling(
        ingest, {"jenkins": jenkins}, settle=lambda job, state: settled.append((job, state)) or None
    )

    polling.tick()
    start = ingest.poll_cursor("jenkins")
    assert start == '{"app-tests": {"next": 1, "open": []}}'
    fake.enqueue("app-tests")
    fake.wait_for("the build", fake.idle)

    fake.fail_next(
        "GET", r"/job/app-tests/api/json", Response(403, b"bot is missing the Job/Read permission")
    )
    polling.tick()  # logged, not raised: the loop goes on
    assert ingest.poll_cursor("jenkins") == start and count_rows(db, "results") == 0

    polling.tick()
    assert ingest.poll_cursor("jenkins") == '{"app-tests": {"next": 2, "open": []}}'
    assert count_rows(db, "results") == 2
    assert settled[0][0] == "app-tests#1" and settled[0][1] == "passed"
    polling.tick()
    assert count_rows(db, "results") == 2
    engine.dispose()
