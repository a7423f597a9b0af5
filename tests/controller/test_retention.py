"""Retention on a real controller: a simulated fleet is analysed, pruned beyond the analysis window and
analysed again from the pruned database alone; the verdicts must not move, and the old rows must be gone,
their results rolled up per test and day."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from controller.analysis.config import AnalysisConfig
from controller.analysis.horizon import horizon
from controller.db import tables
from tests.servers import Controller, database, running_controller
from tests.sim import Fleet, SickRunner, simulate
from tests.sim.scenarios import seed_story

pytestmark = pytest.mark.slow

WINDOW = {"RUNNER_CONTROLLER_ANALYSIS_WINDOW_DAYS": "1", "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0.5"}


def five_days() -> Fleet:
    """The product story over five days, linux-03's disk filling in the last six hours."""
    story = seed_story()
    sick = SickRunner("linux-03", "disk", onset=timedelta(hours=114))
    return simulate(
        replace(story, duration_days=5.0, jobs_per_runner_per_hour=1.0, events=(sick, *story.events[1:])),
        seed=1,
    )


def to_ms(stamp: str) -> int:
    return round(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def verdicts(controller: Controller) -> dict[str, Any]:
    assert controller.post("/v1/analysis/run").status_code == 200
    return {
        "incidents": controller.get("/v1/incidents").json()["items"],
        "tests": controller.get("/v1/tests", params={"all": "true", "limit": 100_000}).json()["items"],
        "runners": {r["identity"]["id"]: r["health"] for r in controller.get("/v1/runners").json()["items"]},
    }


def restarted(controller: Controller, **env: str) -> None:
    controller.stop()
    controller.env = controller.env | env
    controller.start()


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return five_days()


@pytest.fixture
def ingested(tmp_path: Path, fleet: Fleet) -> Iterator[Controller]:
    with running_controller(tmp_path, env=WINDOW | {"RUNNER_CONTROLLER_RETENTION_INTERVAL_S": "0"}) as c:
        for i in range(0, len(fleet.results), 10_000):
            assert c.post("/v1/results", json=fleet.results[i : i + 10_000]).status_code == 200
        for i in range(0, len(fleet.reports), 2_000):
            assert c.post("/v1/reports", json={"reports": fleet.reports[i : i + 2_000]}).status_code == 200
        yield c


def test_pruning_beyond_the_window_keeps_every_verdict(ingested: Controller, fleet: Fleet) -> None:
    controller = ingested
    before = verdicts(controller)
    assert [(i["entity"], i["state"], i["dimension"]) for i in before["incidents"]] == [
        ("linux-03", "sick", "disk")
    ]
    flaky = [t["test_id"] for t in before["tests"] if t["verdict"] == "flaky"]
    assert flaky and set(flaky) <= fleet.truth.flaky_tests

    as_of = max(to_ms(r["time"]) for r in fleet.results if r["outcome"] != "skipped")
    edge = horizon(as_of, AnalysisConfig(window_days=1))
    old_results = [r for r in fleet.results if to_ms(r["time"]) < edge.results_from_ms]
    old_reports = [r for r in fleet.reports if to_ms(r["observed_at"]) < edge.readings_from_ms]
    assert old_results and old_reports  # the fleet reaches past both horizons

    # The leader prunes on its schedule, in batches smaller than one runner's old rows.
    restarted(
        controller, RUNNER_CONTROLLER_RETENTION_INTERVAL_S="1", RUNNER_CONTROLLER_RETENTION_BATCH_ROWS="1000"
    )
    assert controller.post("/v1/analysis/run").status_code == 200
    expected_results = len(fleet.results) - len(old_results)
    pruned_rows = (expected_results, len(fleet.reports) - len(old_reports))
    for _ in range(120):
        if (controller.count("results"), controller.count("reports")) == pruned_rows:
            break
        time.sleep(0.5)
    assert (controller.count("results"), controller.count("reports")) == pruned_rows
    assert controller.count("readings") == sum(
        len(r["readings"]) for r in fleet.reports if to_ms(r["observed_at"]) >= edge.readings_from_ms
    )
    assert "runnerctl_retention_pruned_rows_total" in controller.get("/metrics").text

    # Analysed afresh from the pruned database alone (a new process): the very same verdicts.
    restarted(controller, RUNNER_CONTROLLER_RETENTION_INTERVAL_S="0")
    after = verdicts(controller)
    assert after["incidents"] == before["incidents"]
    assert after["tests"] == before["tests"]
    assert after["runners"] == before["runners"]

    # The pruned results live on as daily counts per test: a test's flake history.
    with database(controller.db) as conn:
        t = tables.result_days
        executions, failures = conn.execute(select(func.sum(t.c.executions), func.sum(t.c.failures))).one()
    counted = [r for r in old_results if r["outcome"] != "skipped"]
    assert executions == len(counted)
    assert failures == sum(r["outcome"] in ("failed", "error") for r in counted)
    explained = controller.get("/v1/tests/explain", params={"test_id": flaky[0]}).json()
    assert explained["archived"] and sum(d["executions"] for d in explained["archived"]) == sum(
        1 for r in counted if r["test_id"] == flaky[0]
    )
