"""The analysis service when a pass fails: reads keep the last verdicts and say why they are behind."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from common.results import TestResult
from common.timeutil import to_ms
from controller.analysis import service as service_module
from controller.analysis.service import AnalysisService
from controller.db.engine import make_engine
from controller.db.schema import migrate
from controller.ingest.results import store_results
from controller.metrics import Metrics
from tests.controller.api.test_ingest import result
from tests.sim import simulate
from tests.sim.scenarios import seed_story

RESULTS = TypeAdapter(list[TestResult])


def _store(engine: Any, minute: int) -> None:
    records = [
        result(f"tests/test_io.py::test_{n}", outcome="passed", time=f"2026-09-21T10:{minute:02d}:{n:02d}Z")
        for n in range(5)
    ]
    with engine.begin() as conn:
        store_results(conn, RESULTS.validate_python(records), 0)


def test_a_failing_pass_leaves_reads_the_last_verdicts_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'controller.db'}")
    migrate(engine)
    _store(engine, 0)
    metrics = Metrics()
    service = AnalysisService(engine, metrics)
    first = service.refresh()
    assert first.as_of_ms > 0 and service.status()["last_error"] is None

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise IndexError("index 0 is out of bounds for axis 0 with size 0")

    monkeypatch.setattr(service_module, "analyse", broken)
    _store(engine, 5)
    service.mark_dirty()
    assert service.refresh() is first  # what a read gets: the verdicts it had, not an error
    status = service.status()
    assert status["last_error"] == "IndexError: index 0 is out of bounds for axis 0 with size 0"
    assert status["pending"] is True
    assert status["as_of"] == first.as_of_ms
    with pytest.raises(IndexError):  # what `POST /v1/analysis/run` asks: it must not pass for done
        service.refresh(force=True)

    monkeypatch.undo()
    caught_up = service.refresh()
    assert caught_up.as_of_ms > first.as_of_ms
    assert service.status()["last_error"] is None


def _store_records(engine: Any, records: list[dict[str, Any]]) -> None:
    with engine.begin() as conn:
        store_results(conn, RESULTS.validate_python(records), 0)


def test_between_full_passes_new_rows_are_screened_and_a_raise_runs_the_full_pass(tmp_path: Path) -> None:
    scenario = seed_story()  # linux-03's disk fills at hour 42 of 48
    fleet = simulate(scenario, seed=1)
    start = to_ms(scenario.start)

    def hours(lo: float, hi: float) -> list[dict[str, Any]]:
        return [
            r
            for r in fleet.results
            if lo * 3_600_000 <= to_ms(datetime.fromisoformat(str(r["time"]))) - start < hi * 3_600_000
        ]

    engine = make_engine(f"sqlite:///{tmp_path / 'controller.db'}")
    migrate(engine)
    _store_records(engine, hours(0, 40))
    service = AnalysisService(engine, Metrics(), full_interval_s=3600)
    service._tick()  # the first pass is always a full one
    first = service.latest
    assert first.as_of_ms > 0 and first.incidents == []

    quiet = hours(40, 41)
    _store_records(engine, quiet)
    service.mark_dirty()
    service._tick()
    assert service.latest is first  # screened only: no full pass for an hour that raised nothing
    status = service.status()
    assert status["screen"]["rows"] == len([r for r in quiet if r["outcome"] != "skipped"])
    assert status["screen"]["suspects"] == [] and status["pending"] is True

    _store_records(engine, hours(41, 48))
    service.mark_dirty()
    service._tick()
    # The screen raised linux-03, and the full pass it ran at once holds the verdict.
    assert service.latest is not first and service.latest.as_of_ms > first.as_of_ms
    assert [(i["kind"], i["entity"]) for i in service.latest.incidents] == [("runner", "linux-03")]
    status = service.status()
    assert status["screen"] is None  # the full pass replaced the screen's provisional findings
    raised = status["last_raise"]  # what started it stays on show
    assert [(s["kind"], s["entity"], s["state"]) for s in raised["suspects"]] == [
        ("runner", "linux-03", "provisional")
    ]
    assert raised["rows"] > len(quiet) and raised["outages"] == []
