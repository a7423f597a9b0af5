"""A Buildbot master that times out, fails with 5xx and rate-limits with 429 while a real controller in
auto mode drains a sick runner: the worker is paused once, no build is rebuilt twice, and the audit log
(GET /v1/actions) says what happened at each step.

The history is the seed story (linux-03's disk fills; its tests fail) imported over HTTP; the master is
the small loopback one in tests/controller/providers/buildbot_master.py, with faults scripted in order.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.controller.providers.buildbot_master import Fault, running_master
from tests.reliability.traffic import wait_until
from tests.servers import Controller, running_controller
from tests.sim import simulate
from tests.sim.scenarios import seed_story

pytestmark = pytest.mark.slow

SICK = "linux-03"


def import_story(controller: Controller) -> None:
    """The seed story's results and reports, with Buildbot as every runner's provider, then one analysis."""
    results: list[str] = []
    reports: list[str] = []
    for line in simulate(seed_story(), seed=1).ndjson_lines():
        line = line.replace('"provider":"github"', '"provider":"buildbot"')
        (reports if line.startswith('{"kind":"report"') else results).append(line)
    session = requests.Session()
    session.headers.update(controller.headers())
    for start in range(0, len(results), 10_000):
        body = "\n".join(results[start : start + 10_000])
        answer = session.post(
            controller.url + "/v1/results",
            data=body,
            headers={"Content-Type": "application/x-ndjson"},
            timeout=300,
        )
        assert answer.status_code == 200, answer.text
    for start in range(0, len(reports), 2_000):
        body = '{"reports":[' + ",".join(reports[start : start + 2_000]) + "]}"
        answer = session.post(
            controller.url + "/v1/reports",
            data=body,
            headers={"Content-Type": "application/json"},
            timeout=300,
        )
        assert answer.status_code == 200, answer.text
    assert session.post(controller.url + "/v1/analysis/run", timeout=300).status_code == 200


def actions(controller: Controller) -> dict[str, dict[str, Any]]:
    items = controller.get("/v1/actions", params={"runner": SICK}).json()["items"]
    return {item["key"]: item for item in items}


def faults() -> list[Fault]:
    """Matched in order; each answers as many requests as its `times`."""
    return [
        # The first cordon: rate limited through all of the client's retries (it honours Retry-After).
        Fault("POST", f"workers/{SICK}$", 429, retry_after="1", rpc="pause", times=4),
        # The second: the master pauses the worker, then the answer is lost (the read timeout is 2 s).
        Fault("POST", f"workers/{SICK}$", 200, delay_s=3, after=True, rpc="pause"),
        # The first three rebuilds: queued then a 500; queued then the answer lost; refused with 429.
        Fault("POST", "builds/", 500, after=True, rpc="rebuild"),
        Fault("POST", "builds/", 200, delay_s=3, after=True, rpc="rebuild"),
        Fault("POST", "builds/", 429, retry_after="1", rpc="rebuild"),
    ]


def test_provider_faults_during_a_drain_double_nothing(tmp_path: Path) -> None:
    with running_master(workers=tuple(f"linux-{i:02d}" for i in range(1, 9))) as master:
        master.state.faults = faults()
        env = {
            "RUNNER_CONTROLLER_PROVIDERS": json.dumps({"buildbot": {"url": master.url, "timeout_s": 2}}),
            "RUNNER_CONTROLLER_REMEDIATION_POLICIES": json.dumps({"linux": {"mode": "auto"}}),
            "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.3",
            "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0",
        }
        with running_controller(tmp_path, env=env) as controller:
            import_story(controller)
            (incident,) = [i for i in controller.get("/v1/incidents").json()["items"] if i["entity"] == SICK]
            jobs = sorted({j["job_id"] for j in incident["affected_jobs"] if j["runner_id"] == SICK})
            assert len(jobs) >= 4, jobs

            def settled() -> bool:
                results = [k for k, a in actions(controller).items() if a["action"] == "rerun-result"]
                return len(results) == len(jobs) - 2  # all but the two whose fate is unknown

            wait_until(settled, 40, "every rerun that can be known to settle")
            pauses_when_settled = master.state.seen.count(f"POST workers/{SICK} pause")
            time.sleep(1.5)  # several more passes: none may pause or rebuild again
            log = actions(controller)
            reruns = {k: a for k, a in log.items() if k.startswith("rerun:")}

    # Paused once: the four rate-limited tries and the lost answer's repeat changed nothing twice.
    assert master.state.count(f"pause {SICK}") == 1 and master.state.count(f"unpause {SICK}") == 0
    assert pauses_when_settled == master.state.seen.count(f"POST workers/{SICK} pause") == 6
    # No build rebuilt twice; the two whose answers failed after queueing were never resubmitted.
    rebuilt = Counter(e.removeprefix("rebuild ") for e in master.state.effects if e.startswith("rebuild "))
    assert rebuilt == dict.fromkeys(jobs, 1)

    cordon = log[f"cordon:{incident['id']}:{SICK}"]
    assert cordon["status"] == "done" and "paused in the provider" in cordon["detail"]
    first = log[f"deferred:cordon:{incident['id']}:{SICK}"]
    assert (
        first["status"] == "failed" and "HTTP 429" in first["detail"] and "no action taken" in first["detail"]
    )
    first_job, second_job, third_job, *rest = jobs
    assert reruns[f"rerun:{incident['id']}:{first_job}"]["status"] == "failed"
    assert "HTTP 500" in reruns[f"rerun:{incident['id']}:{first_job}"]["detail"]
    assert "timed out" in reruns[f"rerun:{incident['id']}:{second_job}"]["detail"]
    for job in (first_job, second_job):
        assert (
            "may or may not have queued it; not resubmitted"
            in reruns[f"rerun:{incident['id']}:{job}"]["detail"]
        )
    refused = log[f"deferred:rerun:{incident['id']}:{third_job}"]
    assert refused["status"] == "deferred" and "HTTP 429" in refused["detail"]
    assert "a 429 queues nothing" in refused["detail"]
    for job in (third_job, *rest):
        assert reruns[f"rerun:{incident['id']}:{job}"]["status"] == "done"
        assert log[f"rerun-result:rerun:{incident['id']}:{job}"]["detail"].endswith("passed")
    # Two reruns' fate is unknown: the controller clears no flake record on a guess.
    assert not [a for a in log.values() if a["action"] == "clear-flakes"]
