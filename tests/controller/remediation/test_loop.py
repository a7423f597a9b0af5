"""The remediation loop over a real (migrated) SQLite database and an in-process provider double.

The provider double records every call, so each test can say exactly how often the controller paused a
runner or reran a job — the numbers a crash or an outage must never double.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from controller.db import tables
from controller.errors import ProviderBusy, ProviderUnavailable
from controller.providers.base import JobRef, Outcome, RunnerState
from controller.remediation import store
from controller.remediation.loop import Remediator
from controller.settings import ControllerSettings


class Crash(BaseException):
    """The process dies here: nothing after this line of the controller runs."""


class Double:
    NAME = "double"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.paused: dict[str, str] = {}
        self.outcomes: dict[str, Outcome] = {}
        self.down = False
        self.crash_after: str | None = None  # "cordon", "uncordon" or "rerun": die right after it acted
        self.crash_before: str | None = None
        self.busy: dict[str, int] = {}  # method -> how many more calls answer 429 before acting

    def _call(self, method: str, arg: str) -> None:
        if self.down:
            raise ProviderUnavailable(self.NAME, f"{method}: connection refused")
        if self.busy.get(method):
            self.busy[method] -= 1
            raise ProviderBusy(self.NAME, f"{method}: HTTP 429", retry_after=0)
        if self.crash_before == method:
            raise Crash(method)
        self.calls.append((method, arg))

    def cordon(self, runner: str, reason: str) -> None:
        self._call("cordon", runner)
        self.paused[runner] = reason
        if self.crash_after == "cordon":
            raise Crash("after cordon")

    def uncordon(self, runner: str) -> None:
        self._call("uncordon", runner)
        self.paused.pop(runner, None)
        if self.crash_after == "uncordon":
            raise Crash("after uncordon")

    def state(self, runner: str) -> RunnerState:
        if self.down:
            raise ProviderUnavailable(self.NAME, "state: timed out")
        return RunnerState(
            online=True, busy=False, cordoned=runner in self.paused, reason=self.paused.get(runner)
        )

    def rerun(self, job: JobRef) -> JobRef:
        self._call("rerun", job.id)
        if self.crash_after == "rerun":
            raise Crash("after rerun")
        return JobRef(f"re-{job.id}")

    def job_outcome(self, job: JobRef) -> Outcome:
        return self.outcomes.get(job.id, "pending")

    def count(self, method: str) -> int:
        return sum(1 for m, _ in self.calls if m == method)


def incident(runner: str, jobs: tuple[str, ...] = ("j1", "j2"), state: str = "sick") -> dict[str, Any]:
    return {
        "id": f"inc-{runner}",
        "kind": "runner",
        "entity": runner,
        "state": state,
        "dimension": "disk",
        "persistent_runners": [runner],
        "affected_jobs": [
            {"job_id": j, "run_id": f"r-{j}", "runner_id": runner, "failures": 3} for j in jobs
        ],
        "tests": [{"test_id": "t::a", "failures": 2}, {"test_id": "t::b", "failures": 1}],
    }


def make(
    engine: Engine, provider: Double, incidents: list[dict[str, Any]], mode: str = "auto", **policy: Any
) -> Remediator:
    settings = ControllerSettings(
        remediation_mode=mode, remediation_policies={"linux": policy} if policy else {}
    )
    return Remediator(engine, settings, lambda: incidents, {"double": provider}, health=lambda _r: {})


def actions(engine: Engine) -> list[tuple[str, str, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(select(tables.actions).order_by(tables.actions.c.id))
        return [(r.action, r.status, r.runner_id) for r in rows]


def test_observe_decides_and_explains_but_acts_on_nothing(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1")], mode="observe")
    rem.tick()
    rem.tick()
    assert provider.calls == []
    assert actions(engine) == [("cordon", "skipped", "r1")]


def test_auto_cordons_then_reruns_once_however_often_it_runs(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1")])
    for _ in range(3):
        rem.tick()
    assert provider.calls == [("cordon", "r1"), ("rerun", "j1"), ("rerun", "j2")]
    with engine.connect() as conn:
        held = store.cordon_of(conn, "r1")
    assert held is not None and (held["source"], held["state"], held["by"]) == (
        "controller",
        "draining",
        "runner-controller",
    )


def test_suspect_is_never_acted_on(engine: Engine) -> None:
    provider = Double()
    make(engine, provider, [incident("r1", state="suspect")]).tick()
    assert provider.calls == []


def test_reruns_passing_elsewhere_clear_the_tests(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1")])
    rem.tick()
    provider.outcomes = {"re-j1": "passed", "re-j2": "passed"}
    rem.tick()
    rem.tick()
    with engine.connect() as conn:
        assert store.cleared_by(conn) == {"t::a": ["inc-r1"], "t::b": ["inc-r1"]}
        assert store.cordon_of(conn, "r1")["state"] == "drained"  # type: ignore[index]
    assert ("clear-flakes", "done", "r1") in actions(engine)


def test_a_test_flaky_on_its_own_is_not_cleared_and_the_entry_says_so(engine: Engine) -> None:
    provider = Double()
    settings = ControllerSettings(remediation_mode="auto")
    rem = Remediator(engine, settings, lambda: [incident("r1")], {"double": provider}, flaky=lambda: {"t::b"})
    rem.tick()
    provider.outcomes = {"re-j1": "passed", "re-j2": "passed"}
    rem.tick()
    with engine.connect() as conn:
        assert store.cleared_by(conn) == {"t::a": ["inc-r1"]}
        (entry,) = conn.execute(select(tables.actions).where(tables.actions.c.action == "clear-flakes"))
    assert entry.detail == "t::a"
    assert entry.reason == (
        "all 2 reruns of the jobs that failed on r1 during inc-r1 passed on other runners: this 1 test "
        "failed because of the runner (disk), not because it is flaky; not cleared, flaky on their own "
        "failures elsewhere: t::b"
    )


def test_a_failed_rerun_clears_nothing(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1")])
    rem.tick()
    provider.outcomes = {"re-j1": "passed", "re-j2": "failed"}
    rem.tick()
    with engine.connect() as conn:
        assert store.cleared_by(conn) == {}


def test_budget_holds_when_two_are_sick_at_once(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1"), incident("r2")])  # 10 runners: max(1, 10 %) = 1
    rem.tick()
    rem.tick()
    assert provider.count("cordon") == 1 and list(provider.paused) == ["r1"]
    with engine.connect() as conn:
        refused = conn.execute(select(tables.actions).where(tables.actions.c.status == "refused")).all()
    assert [(r.runner_id, r.action) for r in refused] == [("r2", "cordon")]
    assert "budget exhausted" in refused[0].detail


def test_storm_acts_on_nothing_and_raises_one_fleet_incident(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident(f"r{i}") for i in range(1, 5)])  # 4 of 10 > 30 %
    rem.tick()
    rem.tick()
    assert provider.calls == []
    assert actions(engine) == [("fleet-incident", "refused", None)]


def test_fail_closed_when_the_provider_is_down(engine: Engine) -> None:
    provider = Double()
    provider.down = True
    rem = make(engine, provider, [incident("r1")])
    rem.tick()
    rem.tick()  # inside the backoff: not even asked again
    assert provider.calls == []
    with engine.connect() as conn:
        assert store.cordon_of(conn, "r1") is None
        failed = (
            conn.execute(select(tables.actions.c.detail).where(tables.actions.c.status == "failed"))
            .scalars()
            .all()
        )
    assert len(failed) == 1 and "fail closed" in failed[0] and "retrying in" in failed[0]


def test_rerun_cap_per_job_across_incidents(engine: Engine) -> None:
    provider = Double()
    first = incident("r1", jobs=("j1",))
    again = first | {"id": "inc-later"}
    rem = make(engine, provider, [first])
    rem.tick()
    make(engine, provider, [again]).tick()
    assert provider.count("rerun") == 1


@pytest.mark.parametrize("where", ["before", "after"], ids=["crash-before-provider", "crash-after-provider"])
def test_crash_between_audit_and_rerun_never_reruns_twice(engine: Engine, where: str) -> None:
    provider = Double()
    setattr(provider, f"crash_{where}", "rerun")
    rem = make(engine, provider, [incident("r1", jobs=("j1",))])
    with pytest.raises(Crash):
        rem.tick()
    provider.crash_before = provider.crash_after = None
    restarted = make(engine, provider, [incident("r1", jobs=("j1",))])
    restarted.start(0)  # start-up recovery, no thread
    restarted.tick()
    restarted.tick()
    assert provider.count("rerun") == (1 if where == "after" else 0)
    with engine.connect() as conn:
        (rerun,) = store.reruns(conn)
        detail = conn.execute(
            select(tables.actions.c.detail).where(tables.actions.c.key == "rerun:inc-r1:j1")
        ).scalar()
    assert rerun.state == "unknown"
    assert "interrupted" in detail and "not resubmitted" in detail


def test_crash_after_pause_is_completed_not_repeated_after_restart(engine: Engine) -> None:
    provider = Double()
    provider.crash_after = "cordon"
    with pytest.raises(Crash):
        make(engine, provider, [incident("r1")]).tick()
    provider.crash_after = None
    make(engine, provider, [incident("r1")]).tick()
    assert provider.count("cordon") == 1
    with engine.connect() as conn:
        held = store.cordon_of(conn, "r1")
    assert held is not None and held["source"] == "controller"


def test_only_its_own_cordons_are_undone(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [], recovery_dwell_s=0, auto_uncordon=True)
    rem.cordon("r2", "alice", "replacing its disk", None, dry_run=False)
    with engine.begin() as conn:
        store.set_cordoned(
            conn, "r1", source="controller", by="runner-controller", reason="inc-r1: sick (disk)"
        )
    rem.tick()
    rem.tick()
    assert "r2" in provider.paused and provider.count("uncordon") == 1
    with engine.connect() as conn:
        assert store.cordon_of(conn, "r1") is None
        assert store.cordon_of(conn, "r2")["by"] == "alice"  # type: ignore[index]


def test_paused_by_someone_else_is_recorded_as_theirs(engine: Engine) -> None:
    provider = Double()
    provider.paused["r1"] = "maintenance window"
    make(engine, provider, [incident("r1")]).tick()
    assert provider.count("cordon") == 0
    with engine.connect() as conn:
        held = store.cordon_of(conn, "r1")
    assert held is not None and held["source"] == "provider" and held["reason"] == "maintenance window"


def test_approve_lists_a_candidate_and_waits_for_drain(engine: Engine) -> None:
    provider = Double()
    sick = incident("r1")
    rem = make(engine, provider, [sick, incident("r2", state="suspect")], mode="approve")
    rem.tick()
    assert provider.calls == []
    assert actions(engine) == [("cordon", "skipped", "r1"), ("cordon", "skipped", "r2")]
    result, notes, _budget = rem.drain("r1", "alice", "approved", rerun=True, dry_run=False)
    assert result.status == "cordoned" and notes == ["job j1 rerun as re-j1", "job j2 rerun as re-j2"]
    assert provider.calls == [("cordon", "r1"), ("rerun", "j1"), ("rerun", "j2")]
    rem.tick()  # approve mode: the loop itself still does nothing more
    assert len(provider.calls) == 3


def test_dry_run_drain_changes_nothing(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1")], mode="approve")
    result, notes, _budget = rem.drain("r1", "alice", "why", rerun=True, dry_run=True)
    assert (result.status, notes) == (
        "cordoned",
        ["would rerun job j1 of inc-r1", "would rerun job j2 of inc-r1"],
    )
    assert provider.calls == [] and actions(engine) == []


def test_dry_run_drain_reruns_nothing_already_rerun_as_the_real_one(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1")])
    rem.tick()
    provider.outcomes = {"re-j1": "passed", "re-j2": "passed"}
    rem.tick()
    before = list(provider.calls)
    said = (
        "nothing to rerun: all 2 failed jobs of inc-r1 were rerun before and are not rerun again: "
        "j1 as re-j1 (passed), j2 as re-j2 (passed)"
    )
    for dry_run in (True, False):
        result, notes, _budget = rem.drain("r1", "alice", "why", rerun=True, dry_run=dry_run)
        assert (result.status, notes) == ("already cordoned", [said]), dry_run
    assert provider.calls == before


def test_dry_run_drain_is_refused_by_the_budget_as_the_real_one(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1")])  # ten runners: one controller cordon at once
    rem.tick()
    refusal = (
        "pool linux: 1 of 1 controller cordons in use, 1 of 10 runners out of rotation; budget exhausted "
        "(max(1, 1) at once); drain it anyway with --ignore-budget"
    )
    for dry_run in (True, False):
        result, notes, _budget = rem.drain("r2", "alice", "why", rerun=True, dry_run=dry_run)
        assert (result.status, result.ok, result.detail, notes) == ("refused", False, refusal, []), dry_run
    assert provider.count("cordon") == 1
    forced, _notes, _budget = rem.drain("r2", "alice", "why", rerun=True, dry_run=False, ignore_budget=True)
    assert forced.status == "cordoned" and provider.count("cordon") == 2


def test_dry_run_fails_closed_as_the_real_one_without_holding_it_back(engine: Engine) -> None:
    provider = Double()
    provider.down = True
    rem = make(engine, provider, [incident("r1")], mode="approve")
    result, _budget = rem.cordon("r1", "alice", "why", None, dry_run=True)
    assert (result.status, result.ok) == ("failed", False)
    assert result.detail == "double: state: timed out; a real run would fail closed: no action taken"
    assert rem.operator_actions.retry_at == {} and actions(engine) == []


def test_a_sick_machine_cordons_its_persistent_runners(engine: Engine) -> None:
    provider = Double()
    machine = incident("r1") | {"kind": "machine", "entity": "vm-1", "persistent_runners": ["r1"]}
    make(engine, provider, [machine]).tick()
    assert provider.calls[0] == ("cordon", "r1")


def test_an_expired_cordon_is_lifted(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [])
    rem.cordon("r3", "alice", "for a minute", expires_ms=1, dry_run=False)
    rem.tick()
    assert provider.calls == [("cordon", "r3"), ("uncordon", "r3")]


def test_uncordon_refuses_a_runner_still_sick_unless_forced(engine: Engine) -> None:
    provider = Double()
    settings = ControllerSettings(remediation_mode="auto")
    rem = Remediator(
        engine,
        settings,
        lambda: [incident("r1")],
        {"double": provider},
        health=lambda _r: {"health": "sick", "dimension": "disk"},
    )
    rem.tick()
    refused = rem.uncordon("r1", "bob", dry_run=False, force=False)
    assert (refused.ok, refused.status) == (False, "refused") and "--force" in refused.detail
    assert rem.uncordon("r1", "bob", dry_run=False, force=True).status == "uncordoned"


def test_a_pushed_outcome_settles_the_rerun_once(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1", jobs=("j1",))])
    rem.tick()
    assert rem.pushed("re-j1", "passed") == "rerun:inc-r1:j1"
    assert rem.pushed("re-j1", "passed") is None  # already settled
    provider.outcomes = {"re-j1": "failed"}  # a later poll does not overwrite it
    rem.tick()
    with engine.connect() as conn:
        assert [r.state for r in store.reruns(conn)] == ["passed"]


def test_auto_without_a_provider_refuses_rather_than_cordon_on_paper(engine: Engine) -> None:
    rem = Remediator(engine, ControllerSettings(remediation_mode="auto"), lambda: [incident("r1")], {})
    rem.tick()
    assert actions(engine) == [("cordon", "refused", "r1")]
    with engine.connect() as conn:
        assert store.cordon_of(conn, "r1") is None


def test_a_rate_limited_rerun_is_submitted_again_once_the_backoff_passes(engine: Engine) -> None:
    provider = Double()
    provider.busy = {"rerun": 1}
    rem = make(engine, provider, [incident("r1", jobs=("j1",))])
    rem.tick()
    assert provider.count("rerun") == 0
    with engine.connect() as conn:
        assert [r.state for r in store.reruns(conn)] == ["deferred"]
        detail = conn.execute(
            select(tables.actions.c.detail).where(tables.actions.c.key == "rerun:inc-r1:j1")
        ).scalar()
    assert "HTTP 429" in detail and "a 429 queues nothing" in detail
    rem.tick()  # inside the backoff: not asked again
    assert provider.count("rerun") == 0
    rem.actions.retry_at.clear()  # the backoff passed
    rem.tick()
    rem.tick()
    assert provider.calls.count(("rerun", "j1")) == 1
    with engine.connect() as conn:
        assert [r.state for r in store.reruns(conn)] == ["submitted"]
        status = conn.execute(
            select(tables.actions.c.status).where(tables.actions.c.key == "rerun:inc-r1:j1")
        ).scalar()
    assert status == "done"


def test_a_crash_during_a_deferred_reruns_second_try_never_reruns_twice(engine: Engine) -> None:
    provider = Double()
    provider.busy = {"rerun": 1}
    rem = make(engine, provider, [incident("r1", jobs=("j1",))])
    rem.tick()
    rem.actions.retry_at.clear()
    provider.crash_after = "rerun"
    with pytest.raises(Crash):
        rem.tick()
    provider.crash_after = None
    restarted = make(engine, provider, [incident("r1", jobs=("j1",))])
    restarted.start(0)
    restarted.tick()
    assert provider.count("rerun") == 1
    with engine.connect() as conn:
        assert [r.state for r in store.reruns(conn)] == ["unknown"]


def modes(engine: Engine, *names: str) -> list[tuple[str, str | None, str | None]]:
    with engine.connect() as conn:
        rows = conn.execute(select(tables.actions).order_by(tables.actions.c.id))
        return [(r.action, r.mode, r.reason) for r in rows if r.action in names]


def test_results_and_clearances_carry_the_mode_their_reruns_ran_under(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1")])
    rem.tick()
    provider.outcomes = {"re-j1": "passed", "re-j2": "passed"}
    rem.tick()
    shown = modes(engine, "rerun", "rerun-result", "clear-flakes")
    assert [(action, mode) for action, mode, _reason in shown] == [
        ("rerun", "auto"),
        ("rerun", "auto"),
        ("rerun-result", "auto"),
        ("rerun-result", "auto"),
        ("clear-flakes", "auto"),
    ]


def test_results_of_an_operators_drain_say_whose_rerun_it_was(engine: Engine) -> None:
    provider = Double()
    rem = make(engine, provider, [incident("r1")], mode="approve")
    rem.drain("r1", "alice", "approved", rerun=True, dry_run=False)
    provider.outcomes = {"re-j1": "passed", "re-j2": "passed"}
    rem.tick()
    assert modes(engine, "rerun-result") == [
        ("rerun-result", None, "a rerun alice asked for"),
        ("rerun-result", None, "a rerun alice asked for"),
    ]
    assert [mode for _a, mode, _r in modes(engine, "clear-flakes")] == [None]
