"""A black-hole worker on real processes (issue 48): a real Buildbot fleet whose worker w3 fails every
build at its first step, before any test runs or any result is uploaded, while w1 and w2 build green.
The controller must name w3 sick from its job records alone, pause it in Buildbot and rebuild its
failed builds on the healthy workers, green there.

The job records are posted by this test over POST /v1/jobs, read from Buildbot's REST API as a
provider would map them: the Buildbot provider's own job-record mapping (issue 48's ingest side) is
not on main yet. Its agents run and read healthy disks: the job outcomes alone are the evidence.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.buildbot import FAILURE, SUCCESS, BuildbotFleet
from tests.e2e.remediation_fleet import Loop, running_loop

pytestmark = [pytest.mark.needs_buildbot, pytest.mark.slow]

ENV = {
    "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0.5",
    "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.5",
    "RUNNER_CONTROLLER_REMEDIATION_POLICIES": '{"buildbot": {"mode": "auto"}}',
}
# Buildbot's results codes as a job record's conclusion; EXCEPTION is the infrastructure's failure.
CONCLUSIONS = {0: "success", 1: "success", 2: "failure", 4: "system_failure", 6: "cancelled"}


def _iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat().replace("+00:00", "Z")


def job_record(fleet: BuildbotFleet, build: dict[str, Any]) -> dict[str, Any]:
    """A finished build as a job record: its first failing step, its worker, its times."""
    steps = fleet.api(f"builds/{build['buildid']}/steps")["steps"]
    failed = next((s["name"] for s in steps if s.get("results") not in (None, 0, 1)), None)
    worker = fleet.workername(build)
    return {
        "job_id": str(build["buildid"]),
        "name": "tests",
        "started": _iso(build["started_at"]),
        "finished": _iso(build["complete_at"]),
        "conclusion": CONCLUSIONS[build["results"]],
        "failed_step": failed,
        "runner": {"id": worker, "machine": worker, "pool": "buildbot", "provider": "buildbot"},
    }


def sick_incident(loop: Loop, worker: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        return next((i for i in loop.incidents() if i["entity"] == worker and i["state"] == "sick"), None)

    incident: dict[str, Any] = loop.wait_for(f"{worker} judged sick", found, timeout=60)
    return incident


def test_a_worker_failing_at_set_up_is_named_drained_and_its_builds_rerun_green(
    buildbot_venv: Path, tmp_path: Path
) -> None:
    with running_loop(tmp_path, buildbot_venv, sick=(), setup_fails=("w3",), env=ENV) as loop:
        loop.force_round(3)
        builds = loop.fleet.builds(complete="true")
        mine = [b for b in builds if loop.fleet.workername(b) == "w3"]
        assert [b["results"] for b in mine] == [FAILURE] * 3
        assert {b["results"] for b in builds if b not in mine} == {SUCCESS}
        # No test result ever came from w3: the result analysis has nothing to go on.
        assert not [i for i in loop.incidents() if i["entity"] == "w3"]
        records = [job_record(loop.fleet, b) for b in builds]
        assert {r["failed_step"] for r in records if r["runner"]["id"] == "w3"} == {"set up workspace"}
        stored = loop.controller.post("/v1/jobs", json=records, token=loop.ingest_token).json()
        assert stored["new"] == len(records)

        incident = sick_incident(loop, "w3")
        assert (incident["kind"], incident["dimension"]) == ("runner", "jobs")
        assert incident["jobs"]["early_deaths"] == 3 and incident["jobs"]["without_tests"] == 3
        failed = {str(b["buildid"]) for b in mine}
        assert {j["job_id"] for j in incident["affected_jobs"]} == failed
        assert [i["entity"] for i in loop.incidents()] == ["w3"]

        loop.wait_for("w3 paused in Buildbot", lambda: loop.paused()["w3"], timeout=60)
        assert loop.paused() == {"w1": False, "w2": False, "w3": True}
        assert "sick (jobs)" in loop.fleet.worker_states()["w3"]["pause_reason"]
        reruns = loop.wait_for(
            "every failed build rerun",
            lambda: (
                (found := loop.actions(action="rerun", status="done")) and len(found) == len(failed) and found
            ),
            timeout=60,
        )
        assert {a["job"] for a in reruns} == failed
        for action in reruns:
            request = int(action["detail"].rpartition("buildrequest:")[2])
            build = loop.fleet.wait_build_for_request(request, timeout=90)
            assert (loop.fleet.workername(build), build["results"]) in {("w1", SUCCESS), ("w2", SUCCESS)}

        explained = loop.runnerctl("explain", "runner", "w3")
        assert explained.returncode == 0, explained.stderr
        text = explained.stdout
        assert "Health:    sick (jobs)" in text and "Cordoned:  yes, by runner-controller" in text
        assert "  jobs: 3 of 3 judged jobs died early" in text
        assert "tests: failure after" in text and "(set up workspace)" in text
