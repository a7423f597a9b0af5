"""The remediation loop and the operator's entry points, in the controller process.

Each pass reads the latest analysis, and for every *sick* runner (or a sick machine's persistent
runners), per its pool's policy: observe (say what it would do), approve (list it as a candidate for
`runnerctl drain`) or auto (cordon within the budget, then rerun its failed jobs elsewhere). It watches
the reruns, records a flake clearance when they all pass, and undoes only its own cordons: once the
runner's readings have been healthy for the dwell (recovery.py).

With several replicas only the leader runs passes (controller/leadership.py), and every audit entry it
writes is fenced by its lease. A replica that becomes leader first settles what the last one left in
flight: a rerun logged as intended is never resubmitted (it may have been queued), so it is not done twice.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy.engine import Engine

from controller.errors import ProviderError
from controller.leadership import Leadership, LeaseLost
from controller.metrics import Metrics
from controller.periodic import Periodic
from controller.placement.base import Placement
from controller.providers.base import Provider, RenewsCordon
from controller.remediation import audit, store
from controller.remediation.actions import CONTROLLER, MARK, Actions
from controller.remediation.audit import now_ms
from controller.remediation.holds import Hold, Lookups, holds
from controller.remediation.nodes import NodeDrains
from controller.remediation.operators import OperatorEntryPoints
from controller.remediation.policy import Budget, Policy, budget, is_storm, policy_for
from controller.remediation.probation import Probations
from controller.remediation.probe import Probes
from controller.remediation.recovery import Recovery
from controller.settings import ControllerSettings

log = logging.getLogger(__name__)
ACTING_KINDS = ("runner", "machine")


class Remediator(OperatorEntryPoints):
    def __init__(
        self,
        engine: Engine,
        settings: ControllerSettings,
        incidents: Callable[[], list[dict[str, Any]]],
        providers: dict[str, Provider],
        health: Callable[[str], dict[str, Any]] | None = None,
        flaky: Callable[[], Collection[str]] | None = None,
        leadership: Leadership | None = None,
        metrics: Metrics | None = None,
        placements: dict[str, Placement] | None = None,
    ) -> None:
        self.engine = engine
        self.metrics = metrics or Metrics()
        self.settings = settings
        self.incidents = incidents
        self.providers = providers
        self.health = health or (lambda _runner: {})
        # Tests the flake analysis keeps flaky: a clearance never vouches for them (actions.clear_flakes).
        self.flaky: Callable[[], Collection[str]] = flaky or (lambda: frozenset())
        self.leadership = leadership
        self.actions = Actions(
            engine, self.provider_for, fence=leadership.fence if leadership else None, metrics=self.metrics
        )
        self.operator_actions = Actions(engine, self.provider_for, metrics=self.metrics)
        self.probations = Probations(
            engine,
            self.actions,
            incidents,
            policy_of=lambda runner: self.policy(self.pool_of(runner)),
            budget_of=lambda runner: self.budget(self.pool_of(runner)),
        )
        self.probes = Probes(engine, self.actions, lambda runner: self.policy(self.pool_of(runner)))
        self.recovery = Recovery(
            engine,
            self.actions,
            self.probations,
            self.probes,
            lambda runner: self.policy(self.pool_of(runner)),
            self.health,
        )
        # Sick machines that are Kubernetes nodes: the cluster drains them (nodes.py).
        self.nodes = NodeDrains(
            engine,
            self.actions,
            placements or {},
            incidents,
            self.policy,
            self.recovery.readings_healthy,
            (settings.storm_ratio, settings.storm_min_runners),
        )
        self.lookups = Lookups(
            self.pool_of, self.policy, self.budget, self.provider_for, self.probations.runners
        )
        self.led_term: int | None = None  # the term whose in-flight work this replica has settled
        self.lock = threading.Lock()  # one actor at a time: the loop or an operator's request
        self._periodic = Periodic("remediation", self.tick, expected=(LeaseLost,))

    # -- lookups --------------------------------------------------------------------------------------

    def provider_for(self, runner: str) -> Provider | None:
        with self.engine.connect() as conn:
            row = store.runner(conn, runner)
        name = (row.provider if row is not None else None) or (
            self.settings.pool_providers.get(row.pool or "") if row is not None else None
        )
        return self.providers.get(name) if name else None

    def policy(self, pool: str | None) -> Policy:
        return policy_for(pool, self.settings.remediation_mode, self.settings.remediation_policies)

    def pool_of(self, runner: str) -> str | None:
        with self.engine.connect() as conn:
            row = store.runner(conn, runner)
        return None if row is None else row.pool

    def budget(self, pool: str | None) -> Budget:
        with self.engine.connect() as conn:
            known = store.runners(conn)
            held = store.out_of_rotation(conn)
        on_probation = self.probations.runners()
        members = {rid for rid, row in known.items() if row.pool == pool and not row.ephemeral}
        trying = sum(1 for rid in members if rid in on_probation and rid not in held)
        mine = sum(1 for rid in members if rid in held and held[rid].source == "controller") + trying
        out = sum(1 for rid in members if rid in held)
        return budget(pool or "<none>", len(members), mine, out, self.policy(pool), trying)

    def holds(self) -> dict[str, Hold]:
        """Sick runners of `auto` pools the disruption budget keeps in rotation for now (holds.py)."""
        targets = self.targets()
        if targets and self._storm_fleet(targets):
            return {}
        return holds(self.engine, targets, self.lookups)

    def targets(self) -> list[tuple[dict[str, Any], str]]:
        """(incident, runner) for every runner a sick runner/machine incident points at, oldest first."""
        found: list[tuple[dict[str, Any], str]] = []
        seen: set[str] = set()
        for incident in self.incidents():
            if incident["state"] != "sick" or incident["kind"] not in ACTING_KINDS:
                continue
            runners = [incident["entity"]] if incident["kind"] == "runner" else incident["persistent_runners"]
            for runner in runners:
                if runner not in seen:
                    seen.add(runner)
                    found.append((incident, runner))
        return found

    # -- the loop -------------------------------------------------------------------------------------

    def start(self, interval_s: float) -> None:
        if self.leadership is None:  # the only replica: what a crash left in flight is settled now
            self.actions.recover_interrupted()
            self.probations.recover_interrupted()
            self.probes.recover_interrupted()
        self._periodic.start(interval_s)

    def stop(self) -> None:
        self._periodic.stop()

    def leads(self) -> bool:
        """Whether this replica may run a pass; a new term first settles what the last leader left."""
        if self.leadership is None:
            return True
        term = self.leadership.term()
        if term is None:
            return False
        if term != self.led_term:
            self.actions.recover_interrupted()
            self.probations.recover_interrupted()
            self.probes.recover_interrupted()
            self.recovery.forget()  # the dwell is kept in memory: it restarts with the new leader
            self.led_term = term
        return True

    def tick(self) -> None:
        with self.lock:
            if not self.leads():
                return
            incidents = {i["id"]: i for i in self.incidents()}
            self._expire()
            self._renew_cordons()
            self.actions.watch_reruns()
            self._mark_drained()
            self.actions.clear_flakes(incidents, self.flaky())
            # Before the targets: a probation a new verdict fails is re-cordoned here, not judged afresh.
            self.probations.watch()
            self.nodes.tick()
            self.probes.watch()
            targets = self.targets()
            if targets and self._storm(targets):
                return
            on_probation = self.probations.runners()
            for incident, runner in targets:
                if runner not in on_probation:
                    self._consider(incident, runner)
            self._candidates_for_approval()
            self.recovery.tick()

    def _storm_fleet(self, targets: list[tuple[dict[str, Any], str]]) -> int:
        """The fleet's size when this many sick runners are a storm (an outage), else 0."""
        with self.engine.connect() as conn:
            fleet = sum(1 for row in store.runners(conn).values() if not row.ephemeral)
        sick = len({runner for _incident, runner in targets})
        return (
            fleet if is_storm(fleet, sick, self.settings.storm_ratio, self.settings.storm_min_runners) else 0
        )

    def _storm(self, targets: list[tuple[dict[str, Any], str]]) -> bool:
        fleet = self._storm_fleet(targets)
        if not fleet:
            return False
        sick = sorted({runner for _incident, runner in targets})
        self.metrics.remediation_blocked.labels("storm").inc()
        self.actions.note(
            "storm:" + ",".join(sorted({i["id"] for i, _r in targets})),
            "fleet-incident",
            "refused",
            actor=CONTROLLER,
            reason=f"{len(sick)} of {fleet} runners sick at once (> {self.settings.storm_ratio:.0%}): "
            "an outage, not sick runners",
            detail="acting on nothing until it passes; sick: " + ", ".join(sick),
        )
        return True

    def _consider(self, incident: dict[str, Any], runner: str) -> None:
        pool = self.pool_of(runner)
        policy = self.policy(pool)
        what = f"runner {runner} is sick ({incident['dimension']}) in {incident['id']}"
        if policy.mode == "observe":
            self.actions.note(
                f"observe:{incident['id']}:{runner}",
                "cordon",
                "skipped",
                actor=CONTROLLER,
                runner_id=runner,
                incident_id=incident["id"],
                mode="observe",
                reason=what,
                detail=f"mode observe: would cordon and rerun its failed jobs; {self.budget(pool).explain()}",
            )
            return
        if policy.mode == "approve":
            self._candidate(incident, runner, what)
            return
        with self.engine.connect() as conn:
            held = store.out_of_rotation(conn).get(runner)
        if held is None and not self._auto_cordon(incident, runner, pool, policy, what):
            return
        self.actions.rerun_jobs(
            incident, runner, actor=CONTROLLER, mode="auto", cap=policy.max_reruns_per_job
        )
        with self.engine.begin() as conn:
            held = store.out_of_rotation(conn).get(runner)
            if held is not None and held.state == "cordoned" and store.reruns(conn, incident["id"]):
                store.set_state(conn, runner, "draining")

    def _auto_cordon(
        self, incident: dict[str, Any], runner: str, pool: str | None, policy: Policy, what: str
    ) -> bool:
        key = f"cordon:{incident['id']}:{runner}"
        with self.engine.connect() as conn:
            if audit.status_of(conn, key) == "done":
                return False  # cordoned for this incident before and since uncordoned: a person decided
        if self.actions.waiting(key):
            return False
        if self.provider_for(runner) is None:
            # A cordon only on paper would let CI keep scheduling on it: fail closed and say so.
            self.metrics.remediation_blocked.labels("no_provider").inc()
            self.actions.note(
                f"no-provider:{incident['id']}:{runner}",
                "cordon",
                "refused",
                actor=CONTROLLER,
                runner_id=runner,
                incident_id=incident["id"],
                mode="auto",
                reason=what,
                detail="no provider configured for this runner (RUNNER_CONTROLLER_PROVIDERS, POOL_PROVIDERS)",
            )
            return False
        room = self.budget(pool)
        if not room.allows:
            self.metrics.remediation_blocked.labels("budget").inc()
            # One entry per state of the budget, not per pass: the log shows each time the numbers that
            # hold it back change (a slot taken, the policy changed), and that it waits in the queue.
            numbers = f"{room.by_controller}/{room.limit}:{room.out_of_rotation}/{room.size}"
            self.actions.note(
                f"refused:{incident['id']}:{runner}:{numbers}",
                "cordon",
                "refused",
                actor=CONTROLLER,
                runner_id=runner,
                incident_id=incident["id"],
                mode="auto",
                reason=what,
                detail=f"{room.explain()}; held: queued until the budget has room, oldest incident first",
            )
            return False
        result = self.actions.cordon(
            runner,
            key=key,
            actor=CONTROLLER,
            source="controller",
            mode="auto",
            incident_id=incident["id"],
            reason=f"{incident['id']}: sick ({incident['dimension']})",
            budget_note=room.explain(),
        )
        if not result.ok:
            # The audit log keeps the first deferral of a key; every retry goes to the log.
            log.warning("not cordoning %s (%s): %s", runner, incident["id"], result.detail)
            self.actions.note(
                f"deferred:{key}",
                "cordon",
                "failed",
                actor=CONTROLLER,
                runner_id=runner,
                incident_id=incident["id"],
                mode="auto",
                reason=what,
                detail=f"fail closed: {result.detail}",
            )
        return result.ok

    def _candidate(self, incident: dict[str, Any], runner: str, what: str) -> None:
        self.actions.note(
            f"candidate:{incident['id']}:{runner}",
            "cordon",
            "skipped",
            actor=CONTROLLER,
            runner_id=runner,
            incident_id=incident["id"],
            mode="approve",
            reason=what,
            detail=f"mode approve: waiting for an operator (runnerctl drain {runner} --rerun)",
        )

    def _candidates_for_approval(self) -> None:
        """In approve mode a suspect is listed too; it is never acted on without an operator."""
        for incident in self.incidents():
            if incident["state"] != "suspect" or incident["kind"] != "runner":
                continue
            if self.policy(self.pool_of(incident["entity"])).mode == "approve":
                self._candidate(incident, incident["entity"], f"runner {incident['entity']} is suspect")

    def _mark_drained(self) -> None:
        with self.engine.connect() as conn:
            draining = [rid for rid, row in store.out_of_rotation(conn).items() if row.state == "draining"]
            open_runs = {row.runner_id for row in store.reruns(conn) if row.state in store.RERUN_OPEN}
        for runner in draining:
            provider = self.provider_for(runner)
            if runner in open_runs or provider is None:
                continue
            try:
                busy = provider.state(runner).busy
            except ProviderError:
                continue
            if not busy:
                with self.engine.begin() as conn:
                    store.set_state(conn, runner, "drained")

    def _expire(self) -> None:
        now = now_ms()
        with self.engine.connect() as conn:
            expired = [
                rid
                for rid, row in store.out_of_rotation(conn).items()
                if row.expires_ms and row.expires_ms <= now
            ]
        for runner in expired:
            self.actions.uncordon(
                runner,
                key=f"expire:{runner}:{now}",
                actor=CONTROLLER,
                reason="the cordon's expiry passed",
                mode=None,
            )

    def _renew_cordons(self) -> None:
        """Keep our pauses in force where the provider lets them lapse; a pause someone made in the
        provider itself (source `provider`) is theirs to keep or let go."""
        with self.engine.connect() as conn:
            held = {rid: row for rid, row in store.out_of_rotation(conn).items() if row.source != "provider"}
        for runner, row in held.items():
            provider = self.provider_for(runner)
            if not isinstance(provider, RenewsCordon):
                continue
            try:
                provider.renew_cordon(runner, f"{MARK} {row.reason}")
            except ProviderError as error:
                log.warning("could not renew the cordon of %s: %s", runner, error)
