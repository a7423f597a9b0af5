"""Probation: the controller's own cordon lifted after the dwell, on trial until the runner's next jobs pass.

Over a real (migrated) SQLite database, with results stored through the real ingest service and the
provider double of test_loop.py, so each test can count the pauses and unpauses a probation caused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.engine import Engine

from common.results import TestResult
from controller.db import tables
from controller.ingest.service import Ingest
from controller.metrics import Metrics
from controller.remediation import store
from controller.remediation.audit import now_ms
from controller.remediation.loop import Remediator
from controller.remediation.policy import Policy
from controller.remediation.probation import judge
from controller.settings import ControllerSettings
from tests.controller.remediation.test_loop import Crash, Double, incident

SICK = {
    "health": "sick",
    "dimension": "disk",
    "incident_id": "inc-r1",
    "warnings": ["latest disk reading is bad"],
}
# Still judged sick (a held runner runs nothing, so its incident cannot resolve), but its readings are fine.
READINGS_FINE = SICK | {"warnings": []}
RECOVERY = {"mode": "auto", "auto_uncordon": True, "recovery_dwell_s": 0}
# A dwell or probe timeout these tests wait out: long enough that a loaded CI machine never crosses it
# between two ticks meant to fall inside it (0.3 s did, once), short enough to sleep through.
WINDOW_S = 2.0


@dataclass
class World:
    """The controller's inputs: the analysis (incidents, health) and the results CI uploads."""

    engine: Engine
    policy: dict[str, Any]
    provider: Double = field(default_factory=Double)
    incidents: list[dict[str, Any]] = field(default_factory=lambda: [incident("r1")])
    health: dict[str, dict[str, Any]] = field(default_factory=lambda: {"r1": dict(SICK)})

    def __post_init__(self) -> None:
        self.ingest = Ingest(self.engine, Metrics())
        self.rem = self.controller()

    def controller(self) -> Remediator:
        settings = ControllerSettings(remediation_mode="observe", remediation_policies={"linux": self.policy})
        return Remediator(
            self.engine,
            settings,
            lambda: self.incidents,
            {"double": self.provider},
            health=lambda runner: self.health.get(runner, {}),
        )

    def set_policy(self, **changes: Any) -> None:
        """The operator changes the pool's policy and restarts the controller."""
        self.policy |= changes
        self.restart()

    def restart(self) -> None:
        """A new controller process on the same database: start-up recovery, no thread."""
        self.rem = self.controller()
        self.rem.start(0)

    def tick(self) -> None:
        self.rem.tick()

    def job(self, job_id: str, failed: int = 0, runner: str = "r1", tests: int = 5) -> None:
        """A finished job on `runner`: its `tests` results uploaded, the first `failed` of them failed."""
        identity = {"id": runner, "machine": runner, "pool": "linux", "provider": "double"}
        records = [
            TestResult.model_validate(
                {
                    "test_id": f"t::{i}",
                    "outcome": "failed" if i < failed else "passed",
                    "time": datetime.now(UTC),
                    "job_id": job_id,
                    "runner": identity,
                }
            )
            for i in range(tests)
        ]
        self.ingest.results(records)

    def state(self, runner: str = "r1") -> str | None:
        with self.engine.connect() as conn:
            return store.state_of(conn, runner)

    def probations(self) -> list[tuple[str, str | None]]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(tables.probations).order_by(tables.probations.c.id))
            return [(r.state, r.outcome) for r in rows]

    def audit(self, action: str) -> list[tuple[str, str, str | None]]:
        with self.engine.connect() as conn:
            t = tables.actions
            rows = conn.execute(select(t).where(t.c.action == action).order_by(t.c.id))
            return [(r.key, r.status, r.detail) for r in rows]


@pytest.fixture
def world(engine: Engine) -> World:
    """r1 sick (disk) and cordoned by the controller in auto mode, its failed jobs rerun elsewhere."""
    found = World(engine, dict(RECOVERY))
    found.job("j1", failed=5)  # the failures that made it sick, stored before any probation
    found.tick()
    assert found.provider.paused.keys() == {"r1"} and found.state() == "draining"
    return found


def on_probation(world: World) -> None:
    world.health["r1"] = dict(READINGS_FINE)
    world.tick()
    assert world.state() == "probation" and "r1" not in world.provider.paused


def test_two_passing_jobs_complete_the_recovery(world: World) -> None:
    world.tick()
    assert world.provider.count("uncordon") == 0  # readings still bad: no dwell, no probation
    on_probation(world)
    (started,) = world.audit("uncordon")
    assert started[0] == "probation:inc-r1:r1:1" and started[1] == "done"
    assert "on probation: 2 jobs must pass on it" in str(started[2])
    with world.engine.connect() as conn:
        assert store.cordon_of(conn, "r1") is None  # in rotation: the agent's directive says so too
    assert "(1 on probation)" in world.rem.budget("linux").explain()
    view = world.rem.probations.view("r1")
    assert view is not None and (view["state"], view["passed_jobs"], view["probe_jobs"]) == ("running", [], 2)

    world.job("p1")
    world.tick()
    assert world.state() == "probation" and world.rem.probations.view("r1")["passed_jobs"] == ["p1"]  # type: ignore[index]
    world.job("p2")
    world.tick()
    assert world.state() == "active" and world.rem.probations.view("r1") is None
    assert world.probations() == [("passed", "probe passed: 2 jobs passed on it (p1, p2); recovered")]
    assert [(k, s) for k, s, _d in world.audit("probation")] == [("probation-passed:1", "done")]
    assert "on probation" not in world.rem.budget("linux").explain()
    world.tick()
    assert (world.provider.count("cordon"), world.provider.count("uncordon")) == (1, 1)


def test_a_job_failing_with_breadth_re_cordons_at_once_and_the_dwell_starts_over(world: World) -> None:
    world.set_policy(recovery_dwell_s=WINDOW_S)
    world.health["r1"] = dict(READINGS_FINE)
    world.tick()
    time.sleep(WINDOW_S + 0.05)
    world.tick()
    assert world.state() == "probation"
    world.job("p1")
    world.job("p2", failed=3)
    world.tick()

    assert world.provider.count("cordon") == 2 and "r1" in world.provider.paused
    assert world.provider.paused["r1"].startswith("runnerctl: inc-r1: probe failed: job p2 failed 3 tests")
    with world.engine.connect() as conn:
        held = store.cordon_of(conn, "r1")
    assert held is not None and (held["source"], held["by"]) == ("controller", "runner-controller")
    assert "1 of 1 controller cordons in use" in world.rem.budget("linux").explain()
    ((key, status, detail),) = world.audit("probation")
    assert (key, status) == ("probation-failed:1", "failed")
    assert (
        detail
        == "probe failed: job p2 failed 3 tests (t::0, t::1, t::2); re-cordoning it, the dwell starts over"
    )
    assert world.probations()[0][0] == "failed"

    world.tick()  # the dwell began again at the re-cordon: too early for a second probation
    assert world.provider.count("uncordon") == 1
    time.sleep(WINDOW_S + 0.05)
    world.tick()
    assert world.provider.count("uncordon") == 2 and world.state() == "probation"
    assert world.audit("uncordon")[-1][0] == "probation:inc-r1:r1:2"


def test_one_failing_test_is_recorded_and_the_probation_goes_on(world: World) -> None:
    on_probation(world)
    world.job("p1", failed=1)
    world.tick()
    world.tick()
    assert world.state() == "probation" and world.provider.count("cordon") == 1
    ((key, status, detail),) = world.audit("probe-job")
    assert (key, status) == ("probe-job:1:p1:1", "done")
    assert "job p1 failed 1 test on probation (t::0): fewer than 3" in str(detail)
    world.job("p2")
    world.tick()
    assert world.state() == "probation"  # p1 did not pass: one of two so far
    world.job("p3")
    world.tick()
    assert world.state() == "active" and world.probations()[0][0] == "passed"


def test_a_probation_that_sees_too_few_jobs_ends_idle_and_stays_in_rotation(world: World) -> None:
    world.set_policy(probe_timeout_s=WINDOW_S)
    on_probation(world)
    world.job("p1")
    world.tick()
    assert world.state() == "probation"
    time.sleep(WINDOW_S + 0.05)
    world.tick()
    assert world.state() == "active" and "r1" not in world.provider.paused
    ((state, outcome),) = world.probations()
    assert state == "idle" and str(outcome).startswith("probation ended idle: 1 of 2 probe jobs passed in ")
    world.tick()
    assert (world.provider.count("cordon"), world.provider.count("uncordon")) == (1, 1)


def test_a_new_verdict_on_probation_re_cordons_it(world: World) -> None:
    on_probation(world)
    world.set_policy(recovery_dwell_s=60)  # so the re-cordon stays for this test to see
    again = incident("r1", state="suspect") | {
        "id": "inc-r1-again",
        "last_failure": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
    }
    world.incidents.append(again)
    world.tick()
    assert world.provider.count("cordon") == 2 and "r1" in world.provider.paused
    assert world.audit("probation")[0][2] == (
        "probe failed: the analysis judges it suspect again (inc-r1-again, disk); "
        "re-cordoning it, the dwell starts over"
    )


def test_an_operators_cordon_on_probation_ends_it_and_is_theirs(world: World) -> None:
    on_probation(world)
    result, _budget = world.rem.cordon("r1", "alice", "looking at it myself", None, dry_run=False)
    assert result.status == "cordoned" and "r1" in world.provider.paused
    assert world.probations()[0][0] == "ended"
    assert world.audit("probation")[0][1:] == (
        "done",
        "probation ended: cordoned by alice; the cordon is theirs",
    )
    world.job("p1")
    world.job("p2")
    world.tick()
    world.tick()
    with world.engine.connect() as conn:
        held = store.cordon_of(conn, "r1")
    assert held is not None and held["by"] == "alice" and world.provider.count("uncordon") == 1


def test_an_operators_uncordon_on_probation_passes_it(world: World) -> None:
    on_probation(world)
    dry = world.rem.uncordon("r1", "bob", dry_run=True, force=False)
    assert (dry.status, world.state()) == ("uncordoned", "probation")
    done = world.rem.uncordon("r1", "bob", dry_run=False, force=False)
    assert (done.status, done.detail) == ("uncordoned", "probation ended: passed by operator bob")
    assert world.state() == "active" and world.probations()[0][0] == "passed-by-operator"
    assert world.rem.uncordon("r1", "bob", dry_run=False, force=False).status == "already uncordoned"
    assert world.provider.count("uncordon") == 1  # it was in rotation already: nothing asked of the provider


def test_a_restarted_controller_carries_on_with_the_probation(world: World) -> None:
    on_probation(world)
    world.job("p1")
    world.tick()
    world.restart()
    world.job("p2")
    world.tick()
    assert world.state() == "active" and world.probations()[0][0] == "passed"
    assert world.provider.count("uncordon") == 1


@pytest.mark.parametrize("where", ["before", "after"], ids=["crash-before-unpause", "crash-after-unpause"])
def test_a_crash_between_audit_and_unpause_never_starts_two_probations(world: World, where: str) -> None:
    setattr(world.provider, f"crash_{where}", "uncordon")
    world.health["r1"] = dict(READINGS_FINE)
    with pytest.raises(Crash):
        world.tick()
    world.provider.crash_before = world.provider.crash_after = None
    world.restart()
    world.tick()
    world.tick()
    assert world.state() == "probation" and [s for s, _o in world.probations()] == ["running"]
    assert world.provider.count("uncordon") == 1
    ((key, status, detail),) = world.audit("uncordon")
    assert (key, status) == ("probation:inc-r1:r1:1", "done")
    if where == "after":
        assert str(detail).startswith("completed after a restart (already unpaused)")


def test_a_failed_probes_re_cordon_fails_closed_while_the_provider_is_down(world: World) -> None:
    on_probation(world)
    world.set_policy(recovery_dwell_s=60)
    world.provider.down = True
    world.job("p1", failed=4)
    world.tick()
    world.tick()  # inside the backoff: not asked again
    assert world.provider.count("cordon") == 1 and world.state() == "probation"
    assert world.probations()[0][0] == "failing"
    ((_key, status, detail),) = [a for a in world.audit("cordon") if a[0].startswith("deferred:")]
    assert status == "failed" and str(detail).startswith("fail closed:") and "no action taken" in str(detail)
    world.provider.down = False
    world.rem.actions.retry_at.clear()  # the backoff passed
    world.tick()
    assert world.provider.count("cordon") == 2 and "r1" in world.provider.paused
    assert world.probations()[0][0] == "failed"


def test_a_failed_probe_never_empties_the_pool(world: World) -> None:
    on_probation(world)
    world.set_policy(min_active=9, recovery_dwell_s=60)  # ten runners: one more out leaves eight
    world.rem.cordon("r2", "alice", "new disk", None, dry_run=False)
    world.job("p1", failed=3)
    world.tick()
    assert "r1" not in world.provider.paused and world.state() == "active"
    assert world.probations()[0][0] == "failed"
    (refused,) = [d for k, s, d in world.audit("cordon") if s == "refused"]
    assert str(refused).startswith("not re-cordoned: pool linux would have fewer than 9 runners in rotation")


def test_a_pool_switched_out_of_auto_ends_the_probation_in_rotation(world: World) -> None:
    on_probation(world)
    world.set_policy(mode="observe")
    world.job("p1", failed=5)
    world.tick()
    assert world.state() == "active" and "r1" not in world.provider.paused
    assert world.probations()[0] == (
        "ended",
        "probation ended: the pool's mode is now observe; it stays in rotation",
    )


def test_without_auto_uncordon_the_dwell_only_says_an_operator_may(world: World) -> None:
    world.set_policy(auto_uncordon=False)
    world.health["r1"] = dict(READINGS_FINE)
    world.tick()
    world.tick()
    assert world.provider.count("uncordon") == 0 and world.state() == "draining"
    ((key, status, detail),) = world.audit("uncordon")
    assert (key, status) == ("recoverable:inc-r1:r1", "skipped")
    assert "an operator may `runnerctl uncordon r1` (with --force" in str(detail)


def test_silent_readings_are_not_healthy_ones(world: World) -> None:
    with world.engine.begin() as conn:
        conn.execute(
            update(tables.runners)
            .where(tables.runners.c.id == "r1")
            .values(last_report_ms=now_ms() - 7_200_000)
        )
    world.health["r1"] = dict(READINGS_FINE)
    world.tick()
    assert world.provider.count("uncordon") == 0 and world.state() == "draining"


@pytest.mark.parametrize(
    ("jobs", "elapsed", "outcome"),
    [
        ({}, 0, "waiting"),
        ({"a": [], "b": []}, 0, "passed"),
        ({"a": [], "b": ["t1", "t2"]}, 0, "waiting"),
        ({"a": [], "b": [], "c": ["t1", "t2", "t3"]}, 0, "failed"),
        ({"a": []}, 3600, "idle"),
        ({"a": ["t1", "t2", "t3"]}, 3600, "failed"),
    ],
    ids=[
        "nothing-yet",
        "two-pass",
        "narrow-failure-waits",
        "breadth-wins",
        "timeout",
        "failure-before-timeout",
    ],
)
def test_judge(jobs: dict[str, list[str]], elapsed: float, outcome: str) -> None:
    assert judge(jobs, Policy(), elapsed, new_verdict=None).outcome == outcome
