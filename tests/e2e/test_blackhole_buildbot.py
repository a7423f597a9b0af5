"""A black-hole worker on real processes (issue 48): a real Buildbot fleet whose worker w3 fails every
build at its first step, before any test runs or any result is uploaded, while w1 and w2 build green.
The controller must name w3 sick from its job records alone, pause it in Buildbot and rebuild its
failed builds on the healthy workers, green there.

The job records come from Buildbot's own status push (`POST /v1/webhooks/buildbot`, with its steps), as
an operator configures it. Its agents run and read healthy disks: the job outcomes alone are the evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.buildbot import FAILURE, SUCCESS
from tests.e2e.remediation_fleet import Loop, running_loop

pytestmark = [pytest.mark.needs_buildbot, pytest.mark.slow]

ENV = {
    "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0.5",
    "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.5",
    "RUNNER_CONTROLLER_REMEDIATION_POLICIES": '{"buildbot": {"mode": "auto"}}',
}


def jobs_of(loop: Loop) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = loop.controller.get("/v1/jobs").json()["items"]
    return items


def sick_incident(loop: Loop, worker: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        return next((i for i in loop.incidents() if i["entity"] == worker and i["state"] == "sick"), None)

    incident: dict[str, Any] = loop.wait_for(f"{worker} judged sick", found, timeout=60)
    return incident


def test_a_worker_failing_at_set_up_is_named_drained_and_its_builds_rerun_green(
    buildbot_venv: Path, tmp_path: Path
) -> None:
    with running_loop(tmp_path, buildbot_venv, sick=(), setup_fails=("w3",), env=ENV) as loop:
        # As in a fleet that has run a while: each worker known (its agent has reported) before its
        # builds' records arrive, which name only the worker and take the pool it is known by.
        loop.wait_for(
            "every worker's agent reported",
            lambda: all(
                loop.controller.get(f"/v1/runners/{w}").status_code == 200 for w in ("w1", "w2", "w3")
            ),
            timeout=60,
        )
        loop.force_round(3)
        builds = loop.fleet.builds(complete="true")
        mine = [b for b in builds if loop.fleet.workername(b) == "w3"]
        assert [b["results"] for b in mine] == [FAILURE] * 3
        assert {b["results"] for b in builds if b not in mine} == {SUCCESS}
        # No test result ever came from w3: the result analysis has nothing to go on.
        assert loop.controller.get("/v1/runners/w3").json()["executions"] == 0
        # Each finished build became a job record through the push, w3's naming the step it died at.
        records = loop.wait_for(
            "a job record per build",
            lambda: (found := jobs_of(loop)) and len(found) == len(builds) and found,
            timeout=60,
        )
        assert {r["failed_step"] for r in records if r["runner"] == "w3"} == {"set up workspace"}

        incident = sick_incident(loop, "w3")
        assert (incident["kind"], incident["dimension"]) == ("runner", "jobs")
        # Named as soon as the evidence suffices (its second early death, where the analysis ran then);
        # the incident grows to hold every build that died there.
        incident = loop.wait_for(
            "w3's incident holding its three builds",
            lambda: (found := sick_incident(loop, "w3"))["jobs"]["early_deaths"] == 3 and found,
            timeout=60,
        )
        assert incident["jobs"]["early_deaths"] == 3 and incident["jobs"]["without_tests"] == 3
        failed = {str(b["buildid"]) for b in mine}
        assert {j["job_id"] for j in incident["affected_jobs"]} == failed
        assert [i["entity"] for i in loop.incidents()] == ["w3"]

        loop.wait_for("w3 paused in Buildbot", lambda: loop.paused()["w3"], timeout=60)
        assert loop.paused() == {"w1": False, "w2": False, "w3": True}
        assert "sick (jobs)" in loop.fleet.worker_states()["w3"]["pause_reason"]
        loop.reruns_green(failed, {"w1", "w2"})

        explained = loop.runnerctl("explain", "runner", "w3")
        assert explained.returncode == 0, explained.stderr
        text = explained.stdout
        assert "Health:    sick (jobs)" in text and "Cordoned:  yes, by runner-controller" in text
        # The push names only the worker: its jobs are judged in the pool the worker is known by.
        assert "Pivot, pool buildbot" in text
        assert "  jobs: 3 of 3 judged jobs died early" in text
        assert "tests: failure after" in text and "(set up workspace" in text
