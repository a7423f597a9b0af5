"""Concurrent writers: the analysis, which resumes after the last id it read, sees every row."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy.engine import Connection, Engine

from common.reports import AgentReport
from common.results import TestResult
from controller.analysis.frame import Frame
from controller.ingest.reports import store_reports
from controller.ingest.results import store_results
from tests.controller.api.test_ingest import report, result


# Each writer its own runner: a shared runner row would serialise them by its row lock anyway.
def write_result(conn: Connection, n: int) -> Any:
    return store_results(conn, [TestResult.model_validate(result(runner={"id": f"r{n}"}))], 0)


def write_report(conn: Connection, n: int) -> Any:
    return store_reports(conn, [AgentReport.model_validate(report(n, runner=f"r{n}"))], 0)


def loaded(frame: Frame) -> int:
    return frame.size + int(frame.r_time_ms.size)


@pytest.mark.parametrize("write", [write_result, write_report], ids=["results", "readings"])
def test_a_row_committed_after_a_later_id_is_still_read(
    engine: Engine, write: Callable[[Connection, int], Any]
) -> None:
    frame = Frame()
    with engine.connect() as first:
        slow = first.begin()
        write(first, 1)
        # A second writer starts while the first has not committed, and is done first if it can be.
        second = threading.Thread(target=_commit_in_thread(engine, write, 2))
        second.start()
        time.sleep(0.5)
        with engine.connect() as reader:
            frame.load(reader)
        slow.commit()
    second.join(timeout=30)
    assert not second.is_alive()
    with engine.connect() as reader:
        frame.load(reader)
    with engine.connect() as reader:
        stored = Frame()
        stored.load(reader)
    assert loaded(stored) > 0
    assert loaded(frame) == loaded(stored)


def _commit_in_thread(engine: Engine, write: Callable[[Connection, int], Any], n: int) -> Callable[[], None]:
    def run() -> None:
        with engine.begin() as conn:
            write(conn, n)

    return run
