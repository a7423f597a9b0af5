"""Probe before return: a runner the controller holds goes back into rotation only once a rerun of a job
that failed on it has passed there, run through its provider while it stays cordoned to every other job.

Only for providers that can pin that rerun to the runner (`Prober` with `pins_probes`); the others keep
the half-open probation of probation.py. A probe that fails, runs elsewhere or never finishes within
`probe_timeout_s` leaves the runner cordoned with its ordinary pause, and its dwell starts over. Each step
is audited before the provider is called; like a rerun, a probe is never resubmitted after a crash.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection, Engine

from common.plural import counted
from common.timeutil import iso
from controller.errors import ProviderError
from controller.providers.base import JobRef, Prober, ProbeResult
from controller.remediation import audit, store
from controller.remediation.actions import CONTROLLER, MARK, Actions, Result
from controller.remediation.audit import now_ms
from controller.remediation.policy import Policy
from controller.remediation.probation import SHOWN_TESTS

KEY = "probe:"


def tests_text(tests: list[str]) -> str:
    if not tests:
        return "no failed test among its stored results"
    shown = ", ".join(tests[:SHOWN_TESTS])
    return shown + (f", and {len(tests) - SHOWN_TESTS} more" if len(tests) > SHOWN_TESTS else "")


def judge(
    row: Any, result: ProbeResult, failed: list[str], policy: Policy, elapsed_s: float
) -> tuple[str, str]:
    """(`waiting` | `passed` | `failed`, why) for one probe, from the provider's word and its results."""
    what = f"probe of job {row.probe_of}"
    elsewhere = result.ran_on != row.runner_id
    if result.outcome == "pending" and (result.ran_on is None or not elsewhere):
        if elapsed_s < policy.probe_timeout_s:
            return "waiting", f"{what} queued as {row.probe_job}"
        return "failed", f"{what} did not finish within {policy.probe_timeout_s:.0f} s"
    ran = result.job.id if result.job else row.probe_job
    if elsewhere:
        # Passed or not, a probe run elsewhere says nothing about this runner.
        return "failed", (
            f"{what} ran on {result.ran_on or 'an unknown runner'}, not on {row.runner_id}: the provider did "
            "not pin it (is its probe hook installed?), so it proves nothing"
        )
    if result.outcome == "passed":
        return "passed", f"probe passed: job {ran} (a rerun of {row.probe_of}) passed on {row.runner_id}"
    return "failed", (
        f"probe failed: job {ran} (a rerun of {row.probe_of}) failed on {row.runner_id}: "
        f"{counted(len(failed), 'test')} ({tests_text(failed)})"
    )


class Probes:
    """Starts and judges probes. Callers hold the remediation lock; every step reads its state from the
    database, so a restarted controller or a new leader carries on where the last one was."""

    def __init__(self, engine: Engine, actions: Actions, policy_of: Callable[[str], Policy]) -> None:
        self.engine = engine
        self.actions = actions
        self.policy_of = policy_of

    def view(self, runner: str) -> dict[str, Any] | None:
        """The runner's newest probe before return, for `describe runner` and `explain runner`."""
        with self.engine.connect() as conn:
            row = store.last_probe(conn, runner)
        if row is None:
            return None
        jobs: dict[str, list[str]] = json.loads(row.jobs)
        return {
            "state": row.state,
            "of": row.probe_of,
            "job": row.probe_job,
            "ran": next(iter(jobs), None),
            "failed_tests": next(iter(jobs.values()), []),
            "since": iso(row.started_ms),
            "outcome": row.outcome,
        }

    # -- start ----------------------------------------------------------------------------------------

    def start(self, runner: str, incident_id: str | None, dwell_s: float) -> Result:
        """Queue the probe: the failed job with the most failed tests there, rerun on this runner only.
        `no probe`: the provider cannot pin one, or no failed job is known to probe it with."""
        provider = self.actions.provider_for(runner)
        if not (isinstance(provider, Prober) and provider.pins_probes):
            return Result(
                "no probe", f"{getattr(provider, 'NAME', 'no provider')} cannot pin a job", ok=False
            )
        with self.engine.connect() as conn:
            job, run_id, tests = self._job_to_probe(conn, runner, incident_id)
            number = store.probations_of(conn, runner, incident_id) + 1
        if job is None:
            return Result("no probe", "no failed job of its incident to probe it with", ok=False)
        key = f"{KEY}{incident_id}:{runner}:{number}"
        entry = self.actions.begin(
            key,
            "probe",
            actor=CONTROLLER,
            runner_id=runner,
            incident_id=incident_id,
            job_id=job,
            mode="auto",
            reason=(
                f"readings healthy for {dwell_s:.0f} s: probing before return with job {job}, which "
                f"failed {counted(len(tests), 'test')} there ({tests_text(tests)})"
            ),
        )
        with self.engine.begin() as conn:
            probation = store.start_probe(conn, runner, incident_id, now_ms(), job)
        try:
            probe = provider.probe(runner, JobRef(job, run_id), f"{incident_id}: probe before return")
        except ProviderError as error:
            # It may have queued it: the ordinary pause (the re-cordon below) unpins it, never twice.
            detail = f"{error}: no probe to judge; it stays cordoned and its dwell starts over"
            audit.finish(self.engine, entry.id, "failed", detail)
            with self.engine.begin() as conn:
                store.update_probation(conn, probation, state="failing", outcome=detail)
            return Result("failed", detail, ok=False)
        with self.engine.begin() as conn:
            store.update_probation(conn, probation, probe_job=probe.id)
        detail = f"queued as {probe.id}, pinned to {runner}; it stays cordoned to every other job"
        audit.finish(self.engine, entry.id, "done", detail)
        return Result("probing", detail)

    def _job_to_probe(
        self, conn: Connection, runner: str, incident_id: str | None
    ) -> tuple[str | None, str | None, list[str]]:
        """The job that failed the most tests on the runner among those rerun for its incident: the
        broadest evidence against it, so a pass says the most."""
        found = [row for row in store.reruns(conn, incident_id) if row.runner_id == runner]
        best: tuple[str | None, str | None, list[str]] = (None, None, [])
        for row in sorted(found, key=lambda r: str(r.job_id)):
            tests = store.failed_tests(conn, runner, row.job_id)
            if best[0] is None or len(tests) > len(best[2]):
                best = (str(row.job_id), row.run_id, tests)
        return best

    def recover_interrupted(self) -> None:
        """At start-up or a new term: a probe still logged as intended may or may not have been queued.
        Never resubmitted; the ordinary pause is put back and the dwell starts over."""
        with self.engine.connect() as conn:
            entries = audit.intended(conn, KEY)
        for entry in entries:
            detail = "interrupted (controller restart or crash) after it was logged; not resubmitted"
            audit.finish(self.engine, entry.id, "failed", detail)
            with self.engine.connect() as conn:
                row = store.open_probation(conn, str(entry.runner_id))
            if row is not None and row.probe_of is not None and row.probe_job is None:
                with self.engine.begin() as conn:
                    store.update_probation(conn, row.id, state="failing", outcome=f"probe {detail}")

    # -- judge ----------------------------------------------------------------------------------------

    def watch(self) -> None:
        with self.engine.connect() as conn:
            rows = [row for row in store.open_probations(conn) if row.probe_of is not None]
        for row in rows:
            self._watch_one(row)

    def _watch_one(self, row: Any) -> None:
        with self.engine.connect() as conn:
            held = store.cordon_of(conn, row.runner_id)
        if held is None or held["source"] != "controller":
            # An operator uncordoned it (or took the cordon over): theirs now, and so is the runner.
            self._end(row, "ended", "probe ended: the runner's cordon changed outside the loop")
            return
        policy = self.policy_of(row.runner_id)
        if row.state == "failing":
            self._recordon(row, str(row.outcome), held["reason"])
            return
        if policy.mode != "auto":
            why = f"probe ended: the pool's mode is now {policy.mode}; it stays cordoned"
            self._recordon(row, why, held["reason"], outcome_state="ended")
            return
        provider = self.actions.provider_for(row.runner_id)
        if row.probe_job is None or not isinstance(provider, Prober):
            return  # being queued, or interrupted: recover_interrupted() settles it
        try:
            result = provider.probe_result(JobRef(row.probe_job))
        except ProviderError:
            return  # unknown: judged on a later pass
        with self.engine.connect() as conn:
            failed = store.failed_tests(conn, row.runner_id, result.job.id) if result.job else []
        verdict, detail = judge(row, result, failed, policy, (now_ms() - row.started_ms) / 1000)
        if verdict == "waiting":
            return
        if result.job is not None:
            with self.engine.begin() as conn:
                store.update_probation(conn, row.id, jobs=json.dumps({result.job.id: failed}))
        if verdict == "passed":
            self._pass(row, detail)
        else:
            self._fail(row, detail, held["reason"])

    def _pass(self, row: Any, detail: str) -> None:
        def end(conn: Connection) -> None:
            store.end_probation(conn, row.id, row.runner_id, "passed", detail, active=True)

        result = self.actions.uncordon(
            row.runner_id,
            key=f"probe-passed:{row.id}",
            actor=CONTROLLER,
            mode="auto",
            incident_id=row.incident_id,
            reason=f"{detail}; back in rotation",
            then=end,
        )
        if result.ok:
            self._note(row, "done", f"{detail}; recovered, back in rotation")

    def _fail(self, row: Any, detail: str, reason: str) -> None:
        outcome = f"{detail}; it stays cordoned, the dwell starts over"
        self._note(row, "failed", outcome)
        with self.engine.begin() as conn:
            store.update_probation(conn, row.id, state="failing", outcome=outcome)
        self._recordon(row, outcome, reason)

    def _recordon(self, row: Any, outcome: str, reason: str, *, outcome_state: str = "failed") -> None:
        """Put the ordinary pause back, which unpins any probe still queued (fail closed: retried)."""
        key = f"probe-recordon:{row.id}"
        if self.actions.waiting(key):
            return
        provider = self.actions.provider_for(row.runner_id)
        entry = self.actions.begin(
            key,
            "cordon",
            actor=CONTROLLER,
            runner_id=row.runner_id,
            incident_id=row.incident_id,
            mode="auto",
            reason=f"{outcome.partition(';')[0]}: the ordinary pause back",
        )
        if not entry.new:
            audit.retry(self.engine, entry.id)
        try:
            if provider is not None:
                provider.cordon(row.runner_id, f"{MARK} {reason}")
        except ProviderError as error:
            audit.finish(self.engine, entry.id, "failed", f"fail closed: {self.actions.defer(key, error)}")
            return
        self.actions.succeeded(key)
        audit.finish(self.engine, entry.id, "done", "paused in the provider, no probe pinned to it")
        self._end(row, outcome_state, outcome)

    def _end(self, row: Any, state: str, detail: str) -> None:
        with self.engine.begin() as conn:
            store.end_probation(conn, row.id, row.runner_id, state, detail, active=False)
        if state == "ended":
            self._note(row, "done", detail)

    def _note(self, row: Any, status: str, detail: str) -> None:
        self.actions.note(
            f"probe-{status}:{row.id}",
            "probation",
            status,
            actor=CONTROLLER,
            runner_id=row.runner_id,
            incident_id=row.incident_id,
            job_id=row.probe_job,
            mode="auto",
            detail=detail,
        )
