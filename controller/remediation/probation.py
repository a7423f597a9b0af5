"""Probation: a runner the controller uncordons after its dwell is on trial until its next jobs pass.

Most providers cannot pin a job to a paused runner, so there is no probe job to send it: the runner goes
back into rotation (a half-open circuit breaker) and the jobs it takes are the probe. `probe_jobs` of
them passing completes the recovery. One failing with breadth (`probe_fail_tests` distinct tests), or a
new verdict on the runner, re-cordons it at once and the dwell starts over; a job with fewer failed
tests is what a flaky test does, so it is recorded and the probation goes on. With too few jobs within
`probe_timeout_s` the probation ends idle: the runner stays in rotation and is judged like any other,
since an idle runner teaches nothing and holding a budget slot for it forever would block real cordons.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine

from common.plural import counted, noun
from common.timeutil import iso, to_ms
from controller.errors import ProviderError
from controller.remediation import audit, store
from controller.remediation.actions import CONTROLLER, Actions, Result
from controller.remediation.audit import now_ms
from controller.remediation.policy import Budget, Policy

OPEN_VERDICTS = ("sick", "suspect")
SHOWN_TESTS = 8


@dataclass(frozen=True)
class Verdict:
    outcome: str  # waiting | passed | failed | idle
    detail: str
    passed: tuple[str, ...] = ()  # jobs none of whose tests failed
    narrow: dict[str, list[str]] = field(default_factory=dict)  # jobs failing short of breadth
    job: str | None = None  # the job that failed the probe


def judge(jobs: dict[str, list[str]], policy: Policy, elapsed_s: float, new_verdict: str | None) -> Verdict:
    """The probe's verdict from the jobs seen on the runner since its probation began, each with the
    distinct tests that failed in it. A failure with breadth decides first, whatever passed besides."""
    passed = tuple(job for job, failed in jobs.items() if not failed)
    narrow = {job: failed for job, failed in jobs.items() if 0 < len(failed) < policy.probe_fail_tests}
    broad = next((job for job, failed in jobs.items() if len(failed) >= policy.probe_fail_tests), None)
    if broad is not None:
        failed = jobs[broad]
        detail = f"probe failed: job {broad} failed {counted(len(failed), 'test')} ({_tests(failed)})"
        return Verdict("failed", detail, passed, narrow, broad)
    if new_verdict is not None:
        return Verdict("failed", f"probe failed: {new_verdict}", passed, narrow)
    if len(passed) >= policy.probe_jobs:
        detail = f"probe passed: {counted(len(passed), 'job')} passed on it ({', '.join(passed)}); recovered"
        return Verdict("passed", detail, passed, narrow)
    if elapsed_s >= policy.probe_timeout_s:
        detail = (
            f"probation ended idle: {len(passed)} of {policy.probe_jobs} {noun(policy.probe_jobs, 'probe job')} passed in "
            f"{policy.probe_timeout_s:.0f} s; it stays in rotation and is judged like any runner"
        )
        return Verdict("idle", detail, passed, narrow)
    return Verdict(
        "waiting",
        f"{len(passed)} of {policy.probe_jobs} {noun(policy.probe_jobs, 'probe job')} passed",
        passed,
        narrow,
    )


def _tests(failed: list[str]) -> str:
    shown = ", ".join(failed[:SHOWN_TESTS])
    return shown + (f", and {len(failed) - SHOWN_TESTS} more" if len(failed) > SHOWN_TESTS else "")


def _on(incident: dict[str, Any], runner: str) -> bool:
    if incident["kind"] == "runner":
        return bool(incident["entity"] == runner)
    return incident["kind"] == "machine" and runner in incident.get("persistent_runners", [])


class Probations:
    """Starts, judges and ends probations. Callers hold the remediation lock; every step reads its state
    from the database, so a restarted controller or a new leader carries on where the last one was."""

    def __init__(
        self,
        engine: Engine,
        actions: Actions,
        incidents: Callable[[], list[dict[str, Any]]],
        policy_of: Callable[[str], Policy],
        budget_of: Callable[[str], Budget],
    ) -> None:
        self.engine = engine
        self.actions = actions
        self.incidents = incidents
        self.policy_of = policy_of
        self.budget_of = budget_of

    def runners(self) -> set[str]:
        with self.engine.connect() as conn:
            return {row.runner_id for row in store.open_probations(conn)}

    def view(self, runner: str) -> dict[str, Any] | None:
        """The open probation of a runner, for `get runners` and `explain runner`."""
        with self.engine.connect() as conn:
            row = store.open_probation(conn, runner)
        if row is None or row.probe_of is not None:  # a probe before return: probe.view()
            return None
        policy = self.policy_of(runner)
        jobs: dict[str, list[str]] = json.loads(row.jobs)
        return {
            "state": row.state,
            "incident": row.incident_id,
            "since": iso(row.started_ms),
            "probe_jobs": policy.probe_jobs,
            "passed_jobs": [job for job, failed in jobs.items() if not failed],
            "failed_jobs": {job: failed for job, failed in jobs.items() if failed},
            "ends_idle_at": iso(row.started_ms + int(policy.probe_timeout_s * 1000)),
            "outcome": row.outcome,
        }

    # -- start ----------------------------------------------------------------------------------------

    def start(self, runner: str, incident_id: str | None, policy: Policy, dwell_s: float) -> Result:
        """Uncordon one of the controller's own cordons on probation (audited before the provider acts)."""
        with self.engine.connect() as conn:
            # Numbered by the probations recorded, so a crash before the record repeats the same key.
            number = store.probations_of(conn, runner, incident_id) + 1
        key = f"probation:{incident_id}:{runner}:{number}"
        if self.actions.waiting(key):
            return Result("failed", "waiting out the provider's backoff", ok=False)
        started = now_ms()  # before the unpause: every job it then takes reports after this
        known = self._open_incidents(runner)

        def record(conn: Any) -> None:
            store.start_probation(conn, runner, incident_id, started, known)

        return self.actions.uncordon(
            runner,
            key=key,
            actor=CONTROLLER,
            mode="auto",
            incident_id=incident_id,
            reason=f"readings healthy for {dwell_s:.0f} s: uncordoned on probation",
            then=record,
            done_note=(
                f"on probation: {counted(policy.probe_jobs, 'job')} must pass on it; a job failing "
                f"{policy.probe_fail_tests}+ tests re-cordons it; {policy.probe_timeout_s:.0f} s "
                "without enough jobs ends it idle"
            ),
        )

    def recover_interrupted(self) -> None:
        """At start-up or a new term: a probation's uncordon still logged as intended was interrupted.
        If the provider shows the runner unpaused, it happened, and the probation began when it was
        logged; if it is still paused, the next pass after the dwell repeats it under the same key."""
        with self.engine.connect() as conn:
            entries = audit.intended(conn, "probation:")
        for entry in entries:
            runner = str(entry.runner_id)
            with self.engine.connect() as conn:
                state = store.state_of(conn, runner)
                held = store.cordon_of(conn, runner)
            if state == store.PROBATION:
                audit.finish(self.engine, entry.id, "done", "completed after a restart: on probation")
                continue
            if held is None or held["source"] != "controller":
                audit.finish(
                    self.engine, entry.id, "failed", "interrupted, and the controller holds it no more"
                )
                continue
            provider = self.actions.provider_for(runner)
            try:
                paused = provider is not None and provider.state(runner).cordoned
            except ProviderError:
                continue  # unknown: leave it to the dwell path, which repeats the same key
            if paused:
                continue
            known = self._open_incidents(runner)
            with self.engine.begin() as conn:
                store.start_probation(conn, runner, entry.incident_id, int(entry.created_ms), known)
            audit.finish(
                self.engine, entry.id, "done", "completed after a restart (already unpaused): on probation"
            )

    # -- judge ----------------------------------------------------------------------------------------

    def watch(self) -> None:
        """Judge every open probation from the results stored for its runner since it began."""
        incidents = self.incidents()
        now = now_ms()
        with self.engine.connect() as conn:
            rows = [row for row in store.open_probations(conn) if row.probe_of is None]  # probe.py's
        for row in rows:
            with self.engine.connect() as conn:
                state = store.state_of(conn, row.runner_id)
            if state != store.PROBATION:
                detail = "probation ended: the runner's state changed outside the loop"
                self._close(row, "ended", detail, active=False)
                continue
            policy = self.policy_of(row.runner_id)
            if policy.mode != "auto":
                # Only auto acts: a pool switched to observe or approve keeps the runner where it is.
                detail = f"probation ended: the pool's mode is now {policy.mode}; it stays in rotation"
                self._close(row, "ended", detail, active=True)
                continue
            if row.state == "failing":
                self._recordon(row, str(row.outcome))  # judged before; its re-cordon is still due
                continue
            with self.engine.connect() as conn:
                jobs = store.probe_results(conn, row.runner_id, row.started_ms)
            verdict = judge(jobs, policy, (now - row.started_ms) / 1000, self._new_verdict(row, incidents))
            self._record(row, jobs, verdict, policy)
            if verdict.outcome == "failed":
                self._fail(row, verdict)
            elif verdict.outcome in ("passed", "idle"):
                self._close(row, verdict.outcome, verdict.detail, active=True)

    def _record(self, row: Any, jobs: dict[str, list[str]], verdict: Verdict, policy: Policy) -> None:
        seen: dict[str, list[str]] = json.loads(row.jobs)
        if jobs != seen:
            with self.engine.begin() as conn:
                store.update_probation(conn, row.id, jobs=json.dumps(jobs))
        for job, failed in verdict.narrow.items():
            if seen.get(job) == failed:
                continue  # noted on an earlier pass
            self.actions.note(
                f"probe-job:{row.id}:{job}:{len(failed)}",
                "probe-job",
                "done",
                actor=CONTROLLER,
                runner_id=row.runner_id,
                incident_id=row.incident_id,
                job_id=job,
                mode="auto",
                detail=(
                    f"job {job} failed {counted(len(failed), 'test')} on probation ({_tests(failed)}): fewer than "
                    f"{policy.probe_fail_tests}, which a flaky test can do; still on probation"
                ),
            )

    def _new_verdict(self, row: Any, incidents: list[dict[str, Any]]) -> str | None:
        """A sick or suspect verdict on the runner that was not open when the probation began and has
        failures since: the open incident it was cordoned for stays open until it runs clean."""
        known = set(json.loads(row.known_incidents))
        for incident in incidents:
            if incident["id"] in known or incident["state"] not in OPEN_VERDICTS:
                continue
            last = incident.get("last_failure")
            if (
                _on(incident, row.runner_id)
                and last
                and to_ms(datetime.fromisoformat(last)) >= row.started_ms
            ):
                return (
                    f"the analysis judges it {incident['state']} again "
                    f"({incident['id']}, {incident['dimension']})"
                )
        return None

    def _open_incidents(self, runner: str) -> list[str]:
        return [i["id"] for i in self.incidents() if i["state"] in OPEN_VERDICTS and _on(i, runner)]

    # -- end ------------------------------------------------------------------------------------------

    def _fail(self, row: Any, verdict: Verdict) -> None:
        outcome = f"{verdict.detail}; re-cordoning it, the dwell starts over"
        self.actions.note(
            f"probation-failed:{row.id}",
            "probation",
            "failed",
            actor=CONTROLLER,
            runner_id=row.runner_id,
            incident_id=row.incident_id,
            job_id=verdict.job,
            mode="auto",
            detail=outcome,
        )
        with self.engine.begin() as conn:
            store.update_probation(conn, row.id, state="failing", outcome=outcome)
        self._recordon(row, outcome)

    def _recordon(self, row: Any, outcome: str) -> None:
        """Cordon a runner whose probe failed, without waiting for room: it kept its budget slot through
        the probation. A pool is still never left with fewer than `min_active` runners in rotation."""
        key = f"recordon:{row.id}"
        if self.actions.waiting(key):
            return
        room = self.budget_of(row.runner_id)
        fields: dict[str, Any] = {
            "actor": CONTROLLER,
            "runner_id": row.runner_id,
            "incident_id": row.incident_id,
            "mode": "auto",
        }
        if not room.leaves_enough:
            why = (
                f"not re-cordoned: pool {room.pool} would have fewer than {room.min_active} runners in "
                f"rotation ({room.out_of_rotation} of {room.size} out already); it stays in rotation"
            )
            self.actions.note(f"refused:{key}", "cordon", "refused", detail=why, **fields)
            self._close(row, "failed", f"{outcome}; {why}", active=True)
            return

        def end(conn: Any) -> None:
            store.end_probation(conn, row.id, row.runner_id, "failed", outcome, active=False)

        result = self.actions.cordon(
            row.runner_id,
            key=key,
            actor=CONTROLLER,
            source="controller",
            mode="auto",
            incident_id=row.incident_id,
            reason=f"{row.incident_id}: {outcome.partition(';')[0]}",
            budget_note="the budget slot it held on probation",
            then=end,
        )
        if not result.ok:
            self.actions.note(
                f"deferred:{key}", "cordon", "failed", detail=f"fail closed: {result.detail}", **fields
            )

    def _close(
        self,
        row: Any,
        outcome: str,
        detail: str,
        *,
        active: bool,
        actor: str = CONTROLLER,
        actions: Actions | None = None,
    ) -> None:
        """End a probation; `active`: the runner is in rotation and the controller's no more, else
        someone else holds or released it already."""
        (actions or self.actions).note(
            f"probation-{outcome}:{row.id}",
            "probation",
            "failed" if outcome == "failed" else "done",
            actor=actor,
            runner_id=row.runner_id,
            incident_id=row.incident_id,
            mode="auto" if actor == CONTROLLER else None,
            detail=detail,
        )
        with self.engine.begin() as conn:
            store.end_probation(conn, row.id, row.runner_id, outcome, detail, active=active)

    # -- operators ------------------------------------------------------------------------------------

    def open_of(self, runner: str) -> Any:
        """The runner's open half-open probation (a probe before return keeps it cordoned: not this)."""
        with self.engine.connect() as conn:
            row = store.open_probation(conn, runner)
        return row if row is not None and row.probe_of is None else None

    def passed_by_operator(self, row: Any, actor: str, actions: Actions) -> Result:
        detail = f"probation ended: passed by operator {actor}"
        self._close(row, "passed-by-operator", detail, active=True, actor=actor, actions=actions)
        return Result("uncordoned", detail)

    def ended_by_cordon(self, row: Any, actor: str, actions: Actions) -> None:
        """An operator cordoned a runner on probation: the cordon is theirs (recorded in its transaction)."""
        actions.note(
            f"probation-ended:{row.id}",
            "probation",
            "done",
            actor=actor,
            runner_id=row.runner_id,
            incident_id=row.incident_id,
            detail=f"probation ended: cordoned by {actor}; the cordon is theirs",
        )
