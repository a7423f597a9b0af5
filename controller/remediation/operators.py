"""What operators (and provider pushes) ask of remediation: cordon, uncordon, drain, a settled rerun.

Mixed into `Remediator`, which owns the state these share with the loop; each takes the same lock,
so an operator's request and a loop pass never act on a runner at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection, Engine

from controller.remediation import store
from controller.remediation.actions import Actions, Result
from controller.remediation.audit import now_ms
from controller.remediation.policy import Budget, Policy
from controller.remediation.probation import Probations


class OperatorEntryPoints:
    engine: Engine
    lock: threading.Lock
    # Unfenced: an operator's request is served by whichever replica receives it, leader or not; its
    # idempotency keys, not the lease, keep it from repeating.
    operator_actions: Actions
    probations: Probations
    incidents: Callable[[], list[dict[str, Any]]]
    health: Callable[[str], dict[str, Any]]

    def budget(self, pool: str | None) -> Budget:
        raise NotImplementedError

    def pool_of(self, runner: str) -> str | None:
        raise NotImplementedError

    def policy(self, pool: str | None) -> Policy:
        raise NotImplementedError

    def pushed(self, new_job_id: str, outcome: str) -> str | None:
        """A provider pushed a finished job: settle the rerun it is, if any; returns the rerun's key."""
        with self.lock:
            with self.engine.connect() as conn:
                row = next(
                    (r for r in store.reruns(conn, state="submitted") if r.new_job_id == new_job_id), None
                )
            if row is None:
                return None
            self.operator_actions.settle(row, outcome)
            return str(row.key)

    def cordon(
        self, runner: str, actor: str, reason: str, expires_ms: int | None, dry_run: bool
    ) -> tuple[Result, dict[str, Any]]:
        with self.lock:
            with self.engine.connect() as conn:
                held = store.cordon_of(conn, runner)
            room = self.budget(self.pool_of(runner))
            if held is not None:
                return Result("already cordoned", f"by {held['by']}: {held['reason']}"), room.as_dict()
            if dry_run:
                return Result("cordoned", "dry run: nothing changed"), room.as_dict()
            probation = self.probations.open_of(runner)

            def end_probation(conn: Connection) -> None:
                if probation is not None:  # the cordon is theirs now: the probation ends with it
                    why = f"cordoned by {actor}; the cordon is theirs"
                    store.end_probation(conn, probation.id, runner, "ended", why, active=False)

            # A person's cordon is theirs to take: the budget binds the controller, not operators.
            result = self.operator_actions.cordon(
                runner,
                key=f"cordon:manual:{runner}:{now_ms()}",
                actor=actor,
                source="operator",
                reason=reason,
                mode=None,
                expires_ms=expires_ms,
                then=end_probation,
            )
            if result.ok and probation is not None:
                self.probations.ended_by_cordon(probation, actor, self.operator_actions)
            return result, room.as_dict()

    def uncordon(self, runner: str, actor: str, dry_run: bool, force: bool) -> Result:
        with self.lock:
            with self.engine.connect() as conn:
                held = store.cordon_of(conn, runner)
            probation = self.probations.open_of(runner) if held is None else None
            if probation is not None:
                if dry_run:
                    return Result("uncordoned", "dry run: nothing changed")
                # Already in rotation: the operator's word ends the trial, as if its probe had passed.
                return self.probations.passed_by_operator(probation, actor, self.operator_actions)
            if held is None:
                return Result("already uncordoned")
            health = self.health(runner)
            if held["source"] == "controller" and health.get("health") == "sick" and not force:
                return Result(
                    "refused",
                    f"runner/{runner} is still sick ({health.get('dimension')}); "
                    "uncordon it anyway with --force",
                    ok=False,
                )
            if dry_run:
                return Result("uncordoned", "dry run: nothing changed")
            return self.operator_actions.uncordon(
                runner,
                key=f"uncordon:manual:{runner}:{now_ms()}",
                actor=actor,
                reason=f"uncordoned by {actor}",
                mode=None,
            )

    def drain(
        self, runner: str, actor: str, reason: str, rerun: bool, dry_run: bool
    ) -> tuple[Result, list[str], dict[str, Any]]:
        """Cordon, then rerun the failed jobs of the runner's newest incident: the operator's approval."""
        incident = next(
            (
                i
                for i in reversed(self.incidents())
                if i["state"] in ("sick", "suspect") and i["kind"] == "runner" and i["entity"] == runner
            ),
            None,
        )
        result, room = self.cordon(runner, actor, reason, None, dry_run)
        if not dry_run:
            self.operator_actions.counted("drain", actor, result)
        notes: list[str] = []
        if not result.ok or not rerun:
            return result, notes, room
        if incident is None:
            notes.append("no open incident on this runner: no failed jobs to rerun")
        elif dry_run:
            jobs = [j["job_id"] for j in incident["affected_jobs"] if j.get("runner_id") == runner]
            notes.append(f"would rerun {len(jobs)} job(s) of {incident['id']}: {', '.join(jobs)}")
        else:
            with self.lock:
                cap = self.policy(self.pool_of(runner)).max_reruns_per_job
                notes = self.operator_actions.rerun_jobs(incident, runner, actor=actor, mode=None, cap=cap)
                with self.engine.begin() as conn:
                    if store.reruns(conn, incident["id"]):
                        store.set_state(conn, runner, "draining")
        return result, notes, room
