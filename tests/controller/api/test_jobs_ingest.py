"""Job records over real HTTP into a real controller: stored once, bad ones refused whole."""

from __future__ import annotations

import json
from typing import Any

from tests.controller.api.test_ingest import count
from tests.servers import Controller


def job(job_id: str = "build-881", conclusion: str = "failure", **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "job_id": job_id,
        "run_id": "run-9",
        "attempt": 1,
        "name": "unit-tests",
        "started": "2026-09-21T10:00:00Z",
        "finished": "2026-09-21T10:00:06Z",
        "conclusion": conclusion,
        "failed_step": "checkout",
        "failure_reason": "runner_system_failure",
        "tests": 0,
        "runner": {"id": "linux-03", "machine": "linux-vm-03", "pool": "linux"},
    }
    record.update(extra)
    return record


def test_jobs_are_stored_once_and_make_their_runner_known(controller: Controller) -> None:
    batch = [job(), job("build-882", "success", failed_step=None, failure_reason=None, tests=40)]
    assert controller.post("/v1/jobs", json=batch).json() == {"accepted": 2, "new": 2, "duplicate": 0}
    assert controller.post("/v1/jobs", json=batch).json() == {"accepted": 2, "new": 0, "duplicate": 2}
    assert count(controller, "jobs") == 2
    # A runner whose jobs die before any test sends no result: its jobs alone make it known.
    runner = controller.get("/v1/runners/linux-03").json()
    assert runner["identity"]["machine"] == "linux-vm-03"
    assert runner["last_seen"] == "2026-09-21T10:00:06Z"


def test_ndjson_job_lines_with_their_kind(controller: Controller) -> None:
    lines = [json.dumps({"kind": "job"} | job(f"b{i}")) for i in range(3)]
    response = controller.post(
        "/v1/jobs", data="\n".join(lines), headers={"Content-Type": "application/x-ndjson"}
    )
    assert response.json()["new"] == 3


def test_bad_job_is_named_and_nothing_is_stored(controller: Controller) -> None:
    backwards = job(started="2026-09-21T10:00:07Z")
    response = controller.post("/v1/jobs", json=[job("fine"), backwards])
    assert response.status_code == 422
    assert "record 1" in response.text and "started is after finished" in response.text
    unknown = controller.post("/v1/jobs", json=[job(conclusion="exploded")])
    assert unknown.status_code == 422 and "conclusion" in unknown.text
    assert count(controller, "jobs") == 0


def test_a_job_naming_only_its_runner_takes_the_pool_it_is_known_by(controller: Controller) -> None:
    # A Buildbot push names only the worker; in pool "default" its jobs would have no peers.
    known = {"test_id": "t", "outcome": "passed", "time": "2026-09-21T09:00:00Z"}
    known["runner"] = {"id": "w3", "machine": "vm-3", "pool": "buildbot"}
    assert controller.post("/v1/results", json=[known]).status_code == 200
    bare = job(runner={"id": "w3"})
    assert controller.post("/v1/jobs", json=[bare, job("b2", runner={"id": "stranger"})]).json()["new"] == 2
    listed = {item["runner"]: item for item in controller.get("/v1/jobs").json()["items"]}
    assert (listed["w3"]["pool"], listed["w3"]["machine"]) == ("buildbot", "vm-3")
    assert (listed["stranger"]["pool"], listed["stranger"]["machine"]) == ("default", "stranger")
