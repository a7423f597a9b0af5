"""The whole story on real processes: a real Buildbot master and workers, a real controller on SQLite,
a real runner-agent beside each worker. One worker's disk really is full (a tmpfs its agent watches) and
its builds really fail; the controller must judge it sick (disk), pause it in Buildbot, rebuild its failed
builds on healthy workers, see them pass and clear the tests' flake records. Then the worker is fixed:
once its readings have been healthy for the dwell, the controller unpauses it on probation, and the
builds it takes next are the probe that completes its recovery.

The observe and auto tests share one fleet on purpose (a fleet plus its builds is most of a minute on a
busy two-core machine): the pool starts in observe mode, then its operator switches it to auto.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.buildbot import FAILURE, SUCCESS
from tests.e2e.remediation_fleet import Loop, can_mount_tmpfs, running_loop, sampling_pauses

pytestmark = [pytest.mark.needs_buildbot, pytest.mark.slow]

FAST = {
    "RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0.5",
    "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.5",
}
AUTO = {"RUNNER_CONTROLLER_REMEDIATION_POLICIES": '{"buildbot": {"mode": "auto"}}'}
# A short dwell so the recovery fits in the test; the readings stay bad until the worker is fixed.
RECOVERY = {"mode": "auto", "auto_uncordon": True, "recovery_dwell_s": 2, "probe_jobs": 2}
AUTO_RECOVERY = {"RUNNER_CONTROLLER_REMEDIATION_POLICIES": json.dumps({"buildbot": RECOVERY})}


@pytest.fixture(scope="module")
def tmpfs_ok(tmp_path_factory: pytest.TempPathFactory) -> None:
    problem = can_mount_tmpfs(tmp_path_factory.mktemp("probe"))
    if problem:
        pytest.skip(problem)


def disk_status(loop: Loop, worker: str) -> str | None:
    readings = loop.controller.get(f"/v1/runners/{worker}").json()["last_readings"]
    return next((r.get("status") for r in readings if r["check"] == "disk"), None)


def sick_incident(loop: Loop, worker: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        return next((i for i in loop.incidents() if i["entity"] == worker and i["state"] == "sick"), None)

    incident: dict[str, Any] = loop.wait_for(f"{worker} judged sick", found, timeout=60)
    return incident


@pytest.fixture(scope="module")
def w3_sick(buildbot_venv: Path, tmpfs_ok: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    """Three workers, w3's disk full; three builds each, judged in observe mode (the default)."""
    with running_loop(tmp_path_factory.mktemp("w3-sick"), buildbot_venv, sick=("w3",), env=FAST) as loop:
        loop.force_round(3)
        yield loop


def test_observe_mode_pauses_nothing(w3_sick: Loop) -> None:
    loop = w3_sick
    incident = sick_incident(loop, "w3")
    assert incident["dimension"] == "disk"
    loop.wait_for(
        "the observe decision in the audit log",
        lambda: loop.actions(runner="w3", status="skipped"),
        timeout=30,
    )
    (decision,) = loop.actions(runner="w3")
    assert (decision["action"], decision["mode"]) == ("cordon", "observe")
    assert "would cordon" in decision["detail"]
    assert loop.paused() == {"w1": False, "w2": False, "w3": False}
    assert len(loop.fleet.builds()) == 9  # no rebuilds


def test_auto_mode_drains_reruns_and_clears(w3_sick: Loop) -> None:
    loop = w3_sick
    loop.restart_controller(**AUTO_RECOVERY)
    incident = sick_incident(loop, "w3")
    failed = {
        str(b["buildid"]) for b in loop.fleet.builds(complete="true") if loop.fleet.workername(b) == "w3"
    }
    assert all(b["results"] == FAILURE for b in loop.fleet.builds() if loop.fleet.workername(b) == "w3")
    assert {j["job_id"] for j in incident["affected_jobs"]} == failed

    loop.wait_for("w3 paused in Buildbot", lambda: loop.paused()["w3"], timeout=60)
    state = loop.fleet.worker_states()["w3"]
    assert state["pause_reason"].startswith("runnerctl: inc-") and "sick (disk)" in state["pause_reason"]
    assert loop.paused() == {"w1": False, "w2": False, "w3": True}

    # Each failed build rebuilt exactly once, on a healthy worker, and green there.
    loop.reruns_green(failed, {"w1", "w2"})

    clearance = loop.wait_for(
        "the flake clearance", lambda: loop.controller.get("/v1/clearances").json()["items"], timeout=60
    )[0]
    assert clearance["incident"] == incident["id"] and clearance["runner"] == "w3"
    assert len(clearance["tests"]) >= 3
    tests = loop.controller.get("/v1/tests").json()["items"]
    cleared = {t["test_id"] for t in tests if incident["id"] in t["cleared_by"]}
    assert cleared == set(clearance["tests"])

    test_view = loop.runnerctl("explain", "test", clearance["tests"][0])
    assert test_view.returncode == 0, test_view.stderr
    assert f"Cleared:   failures inside {incident['id']} were the runner's" in test_view.stdout

    # Reruns settled and the worker idle: w3 is drained, held by the controller.
    loop.wait_for(
        "w3 drained",
        lambda: (loop.controller.get("/v1/runners/w3").json()["cordon"] or {}).get("state") == "drained",
        timeout=30,
    )
    explained = loop.runnerctl("explain", "runner", "w3")
    assert explained.returncode == 0, explained.stderr
    text = explained.stdout
    assert "Health:    sick (disk)" in text
    assert "Cordoned:  yes, by runner-controller" in text
    assert "Remediation (mode auto):" in text
    assert "clear-flakes done" in text and "cordon done" in text
    listed = loop.runnerctl("get", "actions", "--runner", "w3")
    assert listed.returncode == 0, listed.stderr
    kinds = {tuple(line.split()[1:3]) for line in listed.stdout.splitlines()[1:]}
    assert {
        ("cordon", "done"),
        ("rerun", "done"),
        ("rerun-result", "done"),
        ("clear-flakes", "done"),
    } <= kinds
    # Nothing was done twice: one pause, one rerun per failed build, even across the restart.
    assert len(loop.actions(action="cordon", status="done")) == 1


def probe_of(loop: Loop, number: int) -> tuple[dict[str, Any], int]:
    """The `number`th probe of w3 once queued: its audit entry and the Buildbot build request it is."""
    done = loop.wait_for(
        f"probe {number} of w3 queued",
        lambda: [
            a
            for a in loop.actions(runner="w3", action="probe", status="done")
            if a["key"].endswith(f":{number}")
        ],
        timeout=60,
    )
    return done[0], int(done[0]["detail"].split()[2].rpartition(":")[2].rstrip(","))


def test_a_worker_returns_only_after_a_probe_build_passes_on_it(w3_sick: Loop) -> None:
    loop = w3_sick
    # The recovery policy has been in force for longer than its dwell, but w3's disk is still full.
    assert loop.paused()["w3"] and not loop.actions(runner="w3", action="uncordon")
    loop.restart_controller(**loop.with_probe_hook())

    # Its agent sees a healthy disk, but its builds still fail: still sick, whatever the readings say.
    loop.heal_disk("w3")
    loop.wait_for("w3's agent reporting a healthy disk", lambda: disk_status(loop, "w3") == "ok", timeout=15)
    # The analysis reads readings as of its newest result, so the rest of the fleet keeps building.
    loop.fleet.force_build(worker="w1")
    first, request = probe_of(loop, 1)
    assert "probing before return with job" in first["reason"]
    # Work queued while w3 is probed goes anywhere but w3, which stays paused to all but its probe.
    others = [loop.fleet.force_build() for _ in range(3)]
    build = loop.fleet.wait_build_for_request(request, timeout=60)
    assert (loop.fleet.workername(build), build["results"]) == ("w3", FAILURE)
    loop.heal_builds("w3")  # fixed for real now, before the controller can have judged that probe
    assert build["buildid"] != int(first["job"])  # a rerun of the failed job, not the job itself
    assert {loop.fleet.workername(loop.fleet.wait_build_for_request(r, timeout=60)) for r in others} <= {
        "w1",
        "w2",
    }

    (failed,) = loop.wait_for(
        "the probe failed", lambda: loop.actions(runner="w3", action="probation", status="failed"), timeout=30
    )
    assert failed["detail"].startswith(
        f"probe failed: job {build['buildid']} (a rerun of {first['job']}) failed on w3: "
    )
    assert failed["detail"].endswith("it stays cordoned, the dwell starts over")
    # Its ordinary pause is back (the one before its next probe), so nothing is pinned to it any more.
    (repaused,) = [
        a
        for a in loop.actions(runner="w3", action="cordon", status="done")
        if a["incident"] and "no probe pinned" in a["detail"]
    ]
    assert repaused["reason"].startswith("probe failed: job ")

    # The next probe, after a fresh dwell, passes on w3 and only then is it unpaused.
    second, request = probe_of(loop, 2)
    build = loop.fleet.wait_build_for_request(request, timeout=60)
    assert (loop.fleet.workername(build), build["results"]) == ("w3", SUCCESS)
    (passed,) = loop.wait_for(
        "the probe passed", lambda: loop.actions(runner="w3", action="probation", status="done"), timeout=30
    )
    assert passed["detail"] == (
        f"probe passed: job {build['buildid']} (a rerun of {second['job']}) passed on w3; "
        "recovered, back in rotation"
    )
    loop.wait_for("w3 unpaused", lambda: not loop.paused()["w3"], timeout=30)
    (unpaused,) = loop.actions(runner="w3", action="uncordon")
    assert repaused["id"] < second["id"] < unpaused["id"]
    runner = loop.controller.get("/v1/runners/w3").json()
    assert runner["cordon"] is None and runner["probe"]["state"] == "passed"
    described = loop.runnerctl("describe", "runner", "w3")
    assert described.returncode == 0, described.stderr
    assert "Probe:        passed (since" in described.stdout and f"job {build['buildid']}" in described.stdout
    explained = loop.runnerctl("explain", "runner", "w3")
    assert explained.returncode == 0, explained.stderr
    text = explained.stdout
    assert "Cordoned:  no\n" in text and "  probe: passed (since" in text
    assert "probation failed job buildrequest:" in text and "by runner-controller: probe failed: job" in text
    assert len(loop.actions(action="cordon", status="done")) == 2  # the cordon, and the pause put back once


# Three of five sick is more than the default storm share (30 %): raised so that this is a budget's
# business, not an outage's.
BUDGET_FLEET = FAST | {"RUNNER_CONTROLLER_STORM_RATIO": "0.7"}


def budget_of(**policy: float) -> dict[str, str]:
    return {"RUNNER_CONTROLLER_REMEDIATION_POLICIES": json.dumps({"buildbot": {"mode": "auto"} | policy})}


def held_in_audit(loop: Loop, limit: int) -> dict[str, dict[str, Any]]:
    """Runner -> the audit entry that holds it back while `limit` controller cordons are in use."""
    in_use = f"{limit} of {limit} controller cordons in use"
    return {a["runner"]: a for a in loop.actions(action="cordon", status="refused") if in_use in a["detail"]}


def cordons_within_budget(loop: Loop, count: int) -> list[str]:
    """The controller's cordons so far, each of which the audit log says had room when it was made."""
    done = loop.actions(action="cordon", status="done")
    assert len(done) == count, done
    for entry in done:
        assert entry["mode"] == "auto" and "one more allowed" in entry["detail"], entry
    return sorted(a["runner"] for a in done)


def shown_held(loop: Loop) -> dict[str, str]:
    """`runnerctl get runners`: runner -> its CORDONED column."""
    listed = loop.runnerctl("get", "runners")
    assert listed.returncode == 0, listed.stderr
    return {line.split()[0]: line.split()[4] for line in listed.stdout.splitlines()[1:]}


def test_the_budget_drains_at_most_its_share_and_queues_the_rest(
    buildbot_venv: Path, tmpfs_ok: None, tmp_path: Path
) -> None:
    # Three of five sick from their first build, no history before: a budget of 1 drains one and
    # queues two; the pool's operator then allows 40 % (2 of 5) and the first in the queue goes, the
    # last stays queued. Buildbot's own worker states are sampled throughout.
    workers = ("w1", "w2", "w3", "w4", "w5")
    sick = ("w3", "w4", "w5")
    env = BUDGET_FLEET | budget_of(budget_count=1, budget_ratio=1.0)
    with (
        running_loop(tmp_path, buildbot_venv, sick=sick, env=env, workers=workers) as loop,
        sampling_pauses(loop.fleet, bound=1) as samples,
    ):
        for _ in range(3):
            for worker in workers:
                loop.fleet.force_build(worker=worker)
        loop.wait_for("two sick workers held by a budget of 1", lambda: len(held_in_audit(loop, 1)) == 2, 180)
        (drained,) = cordons_within_budget(loop, 1)
        queue = sorted(held_in_audit(loop, 1))
        assert {drained, *queue} == set(sick)
        for entry in held_in_audit(loop, 1).values():
            assert entry["detail"].endswith("held: queued until the budget has room, oldest incident first")
        shown = shown_held(loop)
        assert shown == {w: "yes" if w == drained else "held" if w in queue else "no" for w in workers}
        status = loop.runnerctl("status")
        assert status.returncode == 0, status.stderr
        header, row = status.stdout.splitlines()[:2]
        assert dict(zip(header.split(), row.split(), strict=True))["HELD"] == "2"
        first, second = sorted(
            queue, key=lambda w: loop.controller.get(f"/v1/runners/{w}").json()["held"]["place"]
        )
        assert (
            f"pool buildbot: 2 sick runners held: budget 1 of 1 in use; queued for a cordon: {first}, {second}"
            in status.stdout
        )
        described = loop.runnerctl("describe", "runner", first)
        assert described.returncode == 0, described.stderr
        assert (
            "Cordoned:     no, held: budget 1 of 1 in use; 1st of 2 queued for a cordon (inc-"
            in described.stdout
        )

        samples.bound = 2  # before the controller that may use it starts
        loop.restart_controller(**budget_of(budget_ratio=0.4))
        loop.wait_for("the last sick worker held by 40 % of 5", lambda: len(held_in_audit(loop, 2)) == 1, 60)
        assert cordons_within_budget(loop, 2) == sorted([drained, first])
        assert set(held_in_audit(loop, 2)) == {second}
        assert shown_held(loop)[second] == "held"
        assert "budget 2 of 2 in use; queued for a cordon: " + second in loop.runnerctl("status").stdout
        assert sorted(n for n, p in loop.paused().items() if p) == sorted([drained, first])

    assert samples.over() == []  # never more paused by the controller than the budget in force
    assert (samples.most(1), samples.most(2)) == (1, 2)  # and the sampler saw each budget used up
