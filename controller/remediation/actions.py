"""The provider-facing steps — cordon, uncordon, rerun, watch, clear — each audit-logged before it is
attempted, so a crash or a provider timeout never cordons or reruns twice.

A cordon (a pause) is idempotent: after a crash it is safe to repeat. A rerun is not: a rerun whose audit
entry says `intended` after a restart is never resubmitted; it becomes `unknown` and says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, Engine

from common.plural import counted
from controller.errors import ProviderBusy, ProviderError, ProviderUnavailable
from controller.metrics import Metrics
from controller.providers.base import JobRef, Provider
from controller.remediation import audit, store

log = logging.getLogger(__name__)
CONTROLLER = "runner-controller"
# Written into the provider's pause reason, so a pause seen there can be told from a person's.
MARK = "runnerctl:"
# What else a step records in the transaction that stores its outcome.
StoreStep = Callable[[Connection], None]


def _nothing(_conn: Connection) -> None:
    pass


@dataclass(frozen=True)
class Result:
    """What a step did, for the API's answer and the audit trail: `status` is kubectl's past tense."""

    status: str  # cordoned | already cordoned | uncordoned | already uncordoned | refused | failed | ...
    detail: str = ""
    ok: bool = True


class Actions:
    def __init__(
        self,
        engine: Engine,
        provider_for: Callable[[str], Provider | None],
        fence: Callable[[Connection], None] | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.engine = engine
        self.provider_for = provider_for
        # The leader's lease check, run in the transaction of every audit entry these steps write.
        self.fence = fence
        self.metrics = metrics or Metrics()
        # key -> time.monotonic() before which a failed step is not retried; in memory on purpose: a
        # restart retries at once, which is safe because every step is idempotent or never repeated.
        self.retry_at: dict[str, float] = {}
        self.failures: dict[str, int] = {}

    def begin(self, key: str, action: str, **fields: Any) -> audit.Entry:
        return audit.begin(self.engine, key, action, fence=self.fence, **fields)

    def note(self, key: str, action: str, status: str, **fields: Any) -> audit.Entry:
        return audit.note(self.engine, key, action, status, fence=self.fence, **fields)

    # -- backoff (fail closed, retry later) -----------------------------------------------------------

    def waiting(self, key: str) -> bool:
        return self.retry_at.get(key, 0.0) > time.monotonic()

    def defer(self, key: str, error: ProviderError) -> str:
        count = self.failures.get(key, 0) + 1
        self.failures[key] = count
        delay = min(300.0, 2.0 ** min(count, 8))
        if isinstance(error, ProviderUnavailable) and error.retry_after:
            delay = max(delay, min(error.retry_after, 300.0))
        self.retry_at[key] = time.monotonic() + delay
        return f"{error}; no action taken, retrying in {delay:.0f} s"

    def succeeded(self, key: str) -> None:
        self.retry_at.pop(key, None)
        self.failures.pop(key, None)

    # -- cordon ---------------------------------------------------------------------------------------

    def counted(self, action: str, actor: str, result: Result) -> Result:
        who = "controller" if actor == CONTROLLER else "operator"
        self.metrics.remediation_actions.labels(action, who, result.status).inc()
        return result

    def cordon(
        self,
        runner: str,
        *,
        key: str,
        actor: str,
        source: str,
        reason: str,
        mode: str | None,
        incident_id: str | None = None,
        expires_ms: int | None = None,
        budget_note: str = "",
        then: StoreStep | None = None,
        dry_run: bool = False,
    ) -> Result:
        """`then` runs in the transaction that records the cordon (a probation it ends, say). A dry run
        asks the provider for the runner's state like a real one, and fails closed the same way, but
        writes nothing and pauses nothing."""
        if dry_run:
            return self._cordon_dry_run(runner, key)
        result = self._cordon(
            runner,
            key=key,
            actor=actor,
            source=source,
            reason=reason,
            mode=mode,
            incident_id=incident_id,
            expires_ms=expires_ms,
            budget_note=budget_note,
            then=then or _nothing,
        )
        return self.counted("cordon", actor, result)

    def _cordon_dry_run(self, runner: str, key: str) -> Result:
        provider = self.provider_for(runner)
        if provider is None:
            return Result(
                "cordoned", "dry run: would be recorded only: no provider configured for this runner"
            )
        try:
            state = provider.state(runner)
        except ProviderError as error:
            # Not `defer`: a dry run attempted nothing, so it must not hold back the next real attempt.
            return Result("failed", f"{error}; a real run would fail closed: no action taken", ok=False)
        with self.engine.connect() as conn:
            prior = audit.status_of(conn, key)
        if state.cordoned and not (prior == "intended" or (state.reason or "").startswith(MARK)):
            return Result("already cordoned", f"paused in {provider.NAME} by someone else")
        return Result("cordoned", "dry run: nothing changed")

    def _cordon(
        self,
        runner: str,
        *,
        key: str,
        actor: str,
        source: str,
        reason: str,
        mode: str | None,
        incident_id: str | None,
        expires_ms: int | None,
        budget_note: str,
        then: StoreStep,
    ) -> Result:
        provider = self.provider_for(runner)
        if provider is None:
            # Nothing to pause: the cordon is a record that keeps the controller from acting on it.
            entry = self.begin(
                key,
                "cordon",
                actor=actor,
                runner_id=runner,
                incident_id=incident_id,
                mode=mode,
                reason=reason,
            )
            with self.engine.begin() as conn:
                store.set_cordoned(
                    conn,
                    runner,
                    source=source,
                    by=actor,
                    reason=reason,
                    incident_id=incident_id,
                    expires_ms=expires_ms,
                )
                then(conn)
            audit.finish(
                self.engine, entry.id, "done", "recorded only: no provider configured for this runner"
            )
            return Result("cordoned", "recorded only: no provider configured for this runner")
        prior = None
        with self.engine.connect() as conn:
            prior = audit.status_of(conn, key)
        try:
            state = provider.state(runner)
        except ProviderError as error:
            return Result("failed", self.defer(key, error), ok=False)
        entry = self.begin(
            key,
            "cordon",
            actor=actor,
            runner_id=runner,
            incident_id=incident_id,
            mode=mode,
            reason=reason,
            detail=budget_note or None,
        )
        ours_in_flight = prior == "intended" or (state.reason or "").startswith(MARK)
        if state.cordoned and not ours_in_flight:
            # Paused in the provider by someone else: record it as theirs, never undo it.
            with self.engine.begin() as conn:
                store.set_cordoned(
                    conn,
                    runner,
                    source="provider",
                    by=f"{provider.NAME} (outside runnerctl)",
                    reason=state.reason or "paused in the provider",
                    incident_id=incident_id,
                )
                then(conn)
            audit.finish(
                self.engine, entry.id, "skipped", f"already paused in {provider.NAME}: {state.reason}"
            )
            return Result("already cordoned", f"paused in {provider.NAME} by someone else")
        if not state.cordoned:
            try:
                provider.cordon(runner, f"{MARK} {reason}")
            except ProviderError as error:
                detail = self.defer(key, error)
                audit.finish(self.engine, entry.id, "failed", detail)
                return Result("failed", detail, ok=False)
        with self.engine.begin() as conn:
            store.set_cordoned(
                conn,
                runner,
                source=source,
                by=actor,
                reason=reason,
                incident_id=incident_id,
                expires_ms=expires_ms,
            )
            then(conn)
        self.succeeded(key)
        done = (
            "paused in the provider" if not state.cordoned else "completed after a restart (already paused)"
        )
        audit.finish(self.engine, entry.id, "done", "; ".join(x for x in (done, budget_note) if x))
        return Result("cordoned", done)

    def uncordon(
        self,
        runner: str,
        *,
        key: str,
        actor: str,
        reason: str,
        mode: str | None,
        incident_id: str | None = None,
        then: StoreStep | None = None,
        done_note: str = "",
    ) -> Result:
        """`then` records the runner's new state once the provider has unpaused it (default: active),
        in one transaction; `done_note` is added to the audit entry's detail."""
        result = self._uncordon(
            runner,
            key=key,
            actor=actor,
            reason=reason,
            mode=mode,
            incident_id=incident_id,
            then=then or (lambda conn: store.set_active(conn, runner)),
            done_note=done_note,
        )
        return self.counted("uncordon", actor, result)

    def _uncordon(
        self,
        runner: str,
        *,
        key: str,
        actor: str,
        reason: str,
        mode: str | None,
        incident_id: str | None,
        then: StoreStep,
        done_note: str,
    ) -> Result:
        provider = self.provider_for(runner)
        entry = self.begin(
            key, "uncordon", actor=actor, runner_id=runner, incident_id=incident_id, mode=mode, reason=reason
        )
        if provider is not None:
            try:
                provider.uncordon(runner)
            except ProviderError as error:
                detail = self.defer(key, error)
                audit.finish(self.engine, entry.id, "failed", detail)
                return Result("failed", detail, ok=False)
        with self.engine.begin() as conn:
            then(conn)
        self.succeeded(key)
        done = "unpaused in the provider" if provider else "record cleared"
        audit.finish(self.engine, entry.id, "done", "; ".join(x for x in (done, done_note) if x))
        return Result("uncordoned", done_note)

    # -- reruns ---------------------------------------------------------------------------------------

    def rerun_jobs(
        self,
        incident: dict[str, Any],
        runner: str,
        *,
        actor: str,
        mode: str | None,
        cap: int,
        dry_run: bool = False,
    ) -> list[str]:
        """Rerun the incident's failed jobs on `runner` (which must be out of rotation); returns notes.

        A dry run decides each job exactly as a real run does (rerun before, over the cap, backing off)
        and says what it would do, but records and submits nothing.
        """
        provider = self.provider_for(runner)
        if provider is None:
            return [f"no provider for {runner}: nothing can be rerun"]
        notes: list[str] = []
        settled: list[str] = []
        jobs = {
            j["job_id"]: j
            for j in incident.get("affected_jobs", [])
            if j.get("runner_id") == runner and j.get("job_id")
        }
        for job_id, job in sorted(jobs.items()):
            key = f"rerun:{incident['id']}:{job_id}"
            with self.engine.begin() as conn:
                row = store.rerun(conn, key)
                known = store.reruns_of_job(conn, job_id)
                step = self._rerun_step(key, None if row is None else row.state, known, cap)
                if step == "submit" and not dry_run:
                    if row is None:
                        store.add_rerun(conn, key, incident["id"], runner, job_id, job.get("run_id"))
                    else:  # rate limited before, nothing queued: its turn again
                        store.update_rerun(conn, key, state="pending")
            if step == "settled":
                # Submitted before: the watcher (or crash recovery) owns it now; never twice.
                settled.append(
                    f"{job_id} as {row.new_job_id} ({row.state})"
                    if row.new_job_id
                    else f"{job_id} ({row.state})"
                )
            elif step == "waiting":
                notes.append(
                    f"job {job_id}: refused with a 429 before; submitted again once its backoff passes"
                )
            elif step == "capped":
                detail = f"job {job_id} was already rerun {counted(known, 'time')}; the cap is {cap} per job"
                notes.append(f"not rerun: {detail}")
                if not dry_run:
                    self.metrics.remediation_blocked.labels("rerun_cap").inc()
                    self.note(
                        f"rerun-capped:{incident['id']}:{job_id}",
                        "rerun",
                        "refused",
                        actor=actor,
                        runner_id=runner,
                        incident_id=incident["id"],
                        job_id=job_id,
                        mode=mode,
                        detail=detail,
                    )
            elif dry_run:
                notes.append(f"would rerun job {job_id} of {incident['id']}")
            else:
                notes.append(
                    self._submit(
                        provider, key, incident["id"], runner, job_id, job.get("run_id"), actor, mode
                    )
                )
        if settled and len(settled) == len(jobs):
            notes.append(
                f"nothing to rerun: all {counted(len(jobs), 'failed job')} of {incident['id']} were rerun before "
                f"and are not rerun again: {', '.join(settled)}"
            )
        elif settled:
            notes.append(f"rerun before, not again: {', '.join(settled)}")
        return notes

    def _rerun_step(self, key: str, state: str | None, known: int, cap: int) -> str:
        """What one job's rerun comes to now: `submit`, `capped`, `waiting` (backing off) or `settled`."""
        if state is None:
            return "capped" if known >= cap else "submit"
        if state == "deferred":
            return "waiting" if self.waiting(key) else "submit"
        return "settled"

    def _submit(
        self,
        provider: Provider,
        key: str,
        incident_id: str,
        runner: str,
        job_id: str,
        run_id: str | None,
        actor: str,
        mode: str | None,
    ) -> str:
        entry = self.begin(
            key,
            "rerun",
            actor=actor,
            runner_id=runner,
            incident_id=incident_id,
            job_id=job_id,
            mode=mode,
            reason=f"job {job_id} failed on {runner} during {incident_id}",
        )
        if not entry.new and entry.status != "deferred":
            return self._interrupted(key, entry.id, job_id)
        if not entry.new:
            audit.retry(self.engine, entry.id)
        try:
            new = provider.rerun(JobRef(job_id, run_id))
        except ProviderBusy as error:
            # Refused before the provider acted: nothing was queued, so submitting again later is safe.
            with self.engine.begin() as conn:
                store.update_rerun(conn, key, state="deferred")
            detail = f"{self.defer(key, error)} (a 429 queues nothing: safe to submit again)"
            audit.finish(self.engine, entry.id, "deferred", detail)
            # The entry above moves on when the rerun is submitted; this one keeps the first refusal.
            self.note(
                f"deferred:{key}",
                "rerun",
                "deferred",
                actor=actor,
                runner_id=runner,
                incident_id=incident_id,
                job_id=job_id,
                mode=mode,
                detail=detail,
            )
            return detail
        except ProviderUnavailable as error:
            # A timeout or 5xx may come after the provider queued it: never resubmit on our own.
            with self.engine.begin() as conn:
                store.update_rerun(conn, key, state="unknown")
            self.metrics.reruns.labels("unknown").inc()
            detail = f"{error}: the provider may or may not have queued it; not resubmitted"
            audit.finish(self.engine, entry.id, "failed", detail)
            return detail
        except ProviderError as error:
            with self.engine.begin() as conn:
                store.update_rerun(conn, key, state="failed")
            self.metrics.reruns.labels("submit_failed").inc()
            audit.finish(self.engine, entry.id, "failed", str(error))
            return str(error)
        with self.engine.begin() as conn:
            store.update_rerun(conn, key, state="submitted", new_job_id=new.id)
        self.succeeded(key)
        self.metrics.reruns.labels("submitted").inc()
        audit.finish(self.engine, entry.id, "done", f"queued as {new.id}")
        return f"job {job_id} rerun as {new.id}"

    def _interrupted(self, key: str, entry_id: int, job_id: str) -> str:
        detail = (
            f"rerun of job {job_id} was interrupted (controller restart or crash) after it was logged; "
            "not resubmitted, so it cannot run twice: check the provider and rerun by hand if needed"
        )
        with self.engine.begin() as conn:
            store.update_rerun(conn, key, state="unknown")
        self.metrics.reruns.labels("unknown").inc()
        audit.finish(self.engine, entry_id, "failed", detail)
        return detail

    def recover_interrupted(self) -> None:
        """At start-up: reruns logged as intended but never finished were interrupted by a crash."""
        with self.engine.connect() as conn:
            pending = store.reruns(conn, state="pending")
            statuses = {row.key: audit.status_of(conn, row.key) for row in pending}
        for row in pending:
            if statuses[row.key] == "intended":
                entry = self.begin(row.key, "rerun", actor=CONTROLLER)
                self._interrupted(row.key, entry.id, row.job_id)
            elif statuses[row.key] is None:
                with self.engine.begin() as conn:  # logged nowhere: never attempted, safe to drop
                    store.update_rerun(conn, row.key, state="failed")

    def watch_reruns(self) -> None:
        with self.engine.connect() as conn:
            submitted = store.reruns(conn, state="submitted")
        for row in submitted:
            provider = self.provider_for(row.runner_id)
            if provider is None or self.waiting(f"watch:{row.key}"):
                continue
            try:
                outcome = provider.job_outcome(JobRef(row.new_job_id))
            except ProviderError as error:
                log.warning("rerun %s: %s", row.key, self.defer(f"watch:{row.key}", error))
                continue
            if outcome != "pending":
                self.settle(row, outcome)

    def settle(self, row: Any, outcome: str) -> None:
        """A rerun finished (polled, or pushed by the provider's webhook)."""
        with self.engine.begin() as conn:
            store.update_rerun(conn, row.key, state=outcome)
            # The result belongs to the rerun: it ran under that rerun's mode, or under none when an
            # operator asked for it (a drain), which the audit log should say rather than leave blank.
            mode, asked_by = audit.mode_and_actor(conn, row.key)
        self.metrics.reruns.labels(outcome).inc()
        self.note(
            f"rerun-result:{row.key}",
            "rerun-result",
            "done",
            actor=CONTROLLER,
            runner_id=row.runner_id,
            incident_id=row.incident_id,
            job_id=row.job_id,
            mode=mode,
            reason=None if asked_by in (None, CONTROLLER) else f"a rerun {asked_by} asked for",
            detail=f"rerun {row.new_job_id} of job {row.job_id} {outcome}",
        )

    def clear_flakes(self, incidents: dict[str, dict[str, Any]], flaky: Collection[str] = ()) -> None:
        """Incidents whose reruns all passed elsewhere: their tests' failures were the runner's.

        `flaky` names the tests the flake analysis keeps flaky on their failures outside incidents: one of
        them failing on the sick runner too proves nothing about the runner, so it is not cleared, and
        the entry says which tests were left out and why rather than call them not flaky.
        """
        with self.engine.connect() as conn:
            rows = store.reruns(conn)
            asked = {row.key: audit.mode_and_actor(conn, row.key) for row in rows}
        by_incident: dict[str, list[Any]] = {}
        for row in rows:
            by_incident.setdefault(row.incident_id, []).append(row)
        for incident_id, runs in by_incident.items():
            incident = incidents.get(incident_id)
            if incident is None or not all(r.state == "passed" for r in runs):
                continue
            failed = sorted({t["test_id"] for t in incident.get("tests", [])})
            tests = [t for t in failed if t not in flaky]
            kept = [t for t in failed if t in flaky]
            one = len(tests) == 1
            reason = (
                f"all {counted(len(runs), 'rerun')} of the jobs that failed on {runs[0].runner_id} during "
                f"{incident_id} passed on other runners: {'this' if one else 'these'} {counted(len(tests), 'test')} "
                f"failed because of the runner ({incident.get('dimension')}), not because "
                f"{'it is' if one else 'they are'} flaky"
            )
            if kept:
                reason += f"; not cleared, flaky on their own failures elsewhere: {', '.join(kept)}"
            # A clearance follows from its reruns: it ran under their mode, or none if an operator
            # asked for them (or, rarely, some of each).
            modes = {asked[r.key][0] for r in runs}
            mode = modes.pop() if len(modes) == 1 else None
            with self.engine.begin() as conn:
                added = store.add_clearance(conn, incident_id, runs[0].runner_id, tests, reason)
            if added:
                self.note(
                    f"clear:{incident_id}",
                    "clear-flakes",
                    "done",
                    actor=CONTROLLER,
                    runner_id=runs[0].runner_id,
                    incident_id=incident_id,
                    mode=mode,
                    reason=reason,
                    detail=", ".join(tests),
                )
