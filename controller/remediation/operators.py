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
        self,
        runner: str,
        actor: str,
        reason: str,
        expires_ms: int | None,
        dry_run: bool,
        within_budget: bool = False,
    ) -> tuple[Result, dict[str, Any]]:
        """A person's cordon. With `within_budget` (a drain) the pool's disruption budget binds it as it
        binds the controller's. A dry run takes every check a real one does, provider included."""
        with self.lock:
            with self.engine.connect() as conn:
                held = store.cordon_of(conn, runner)
            room = self.budget(self.pool_of(runner))
            if held is not None:
                return Result("already cordoned", f"by {held['by']}: {held['reason']}"), room.as_dict()
            if within_budget and not room.allows:
                why = f"{room.explain()}; drain it anyway with --ignore-budget"
                return Result("refused", why, ok=False), room.as_dict()
            key = f"cordon:manual:{runner}:{now_ms()}"
            if dry_run:
                return self.operator_actions.cordon(
                    runner, key=key, actor=actor, source="operator", reason=reason, mode=None, dry_run=True
                ), room.as_dict()
            probation = self.probations.open_of(runner)

            def end_probation(conn: Connection) -> None:
                if probation is not None:  # the cordon is theirs now: the probation ends with it
                    why = f"cordoned by {actor}; the cordon is theirs"
                    store.end_probation(conn, probation.id, runner, "ended", why, active=False)

            # A person's plain cordon is theirs to take: the budget binds the controller (and drains).
            result = self.operator_actions.cordon(
                runner,
                key=key,
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
        self, runner: str, actor: str, reason: str, rerun: bool, dry_run: bool, ignore_budget: bool = False
    ) -> tuple[Result, list[str], dict[str, Any]]:
        """Cordon, then rerun the failed jobs of the runner's newest incident: the operator's approval of
        what the controller would do in `auto`, so within the same budget unless `ignore_budget`. A dry
        run decides everything the same way and acts on nothing."""
        incident = next(
            (
                i
                for i in reversed(self.incidents())
                if i["state"] in ("sick", "suspect") and i["kind"] == "runner" and i["entity"] == runner
            ),
            None,
        )
        result, room = self.cordon(runner, actor, reason, None, dry_run, within_budget=not ignore_budget)
        if not dry_run:
            self.operator_actions.counted("drain", actor, result)
        notes: list[str] = []
        if not result.ok or not rerun:
            return result, notes, room
        if incident is None:
            notes.append("no open incident on this runner: no failed jobs to rerun")
            return result, notes, room
        with self.lock:
            cap = self.policy(self.pool_of(runner)).max_reruns_per_job
            notes = self.operator_actions.rerun_jobs(
                incident, runner, actor=actor, mode=None, cap=cap, dry_run=dry_run
            )
            if not dry_run:
                with self.engine.begin() as conn:
                    if store.reruns(conn, incident["id"]):
                        store.set_state(conn, runner, "draining")
        return result, notes, room
