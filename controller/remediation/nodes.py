"""Node drains: a sick machine whose runners are pods is taken out of rotation by its cluster, then its
failed jobs are rerun through the CI provider (no provider's rerun can exclude a host, so the drain comes
first), and the node is given back on probation once its readings are healthy.

Per sick `machine` incident whose pool has a fleet (controller/placement): cordon the node within the
pool's disruption budget, delete its idle runners (an idle runner left there would take the rerun), leave
busy ones to finish until the fleet's `drain_timeout_s` (then say so; a running job is never killed),
rerun. What runnerctl holds lives on the node (placement/kubernetes.py), so a restart reads it back.
Every write is audited before it is sent, with the API calls it made (and the reads that decided it);
a fleet with `dry_run` audits the calls it would make and sends none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from controller.errors import ProviderError
from controller.placement.base import Fleet, NodeState, Placement
from controller.remediation import audit
from controller.remediation.actions import CONTROLLER, Actions
from controller.remediation.audit import now_ms
from controller.remediation.node_probation import NodeRecovery, calls_text
from controller.remediation.policy import Budget, Policy, budget, is_storm

log = logging.getLogger(__name__)
Target = tuple[dict[str, Any], Placement, Fleet, str]


@dataclass(frozen=True)
class Acting:
    """Who acts on a node: the controller's loop (its audit entries fenced by its lease) or an operator
    (node_operators.py), so both take the same steps and the audit log says whose they were."""

    actor: str
    actions: Actions
    mode: str | None

    def fields(self, incident_id: str | None, node: str) -> dict[str, Any]:
        return {
            "actor": self.actor,
            "runner_id": f"node/{node}",
            "incident_id": incident_id,
            "mode": self.mode,
        }


class NodeDrains:
    def __init__(
        self,
        engine: Engine,
        actions: Actions,
        placements: dict[str, Placement],
        incidents: Callable[[], list[dict[str, Any]]],
        policy_of: Callable[[str | None], Policy],
        readings_healthy: Callable[[str, int], bool],
        storm: tuple[float, int] = (0.3, 3),
    ) -> None:
        self.engine = engine
        self.actions = actions
        self.placements = placements
        self.incidents = incidents
        self.policy_of = policy_of
        self.readings_healthy = readings_healthy
        self.storm = storm
        self.recovery = NodeRecovery(engine, actions, policy_of, readings_healthy)
        self.loop = Acting(CONTROLLER, actions, "auto")

    # -- lookups --------------------------------------------------------------------------------------

    def fleet_of(self, pools: list[str]) -> tuple[Placement, Fleet] | None:
        for placement in self.placements.values():
            for pool in pools:
                fleet = placement.fleet(pool)
                if fleet is not None:
                    return placement, fleet
        return None

    def targets(self) -> list[Target]:
        found: list[Target] = []
        for incident in self.incidents():
            if incident["state"] != "sick" or incident["kind"] != "machine":
                continue
            placed = self.fleet_of(list(incident.get("pool") or []))
            if placed is not None:
                found.append((incident, *placed, placed[0].node_of(incident["entity"])))
        return found

    def incident_of(self, placement: Placement, node: str) -> dict[str, Any] | None:
        """The newest open (sick or suspect) machine incident on this node, if any."""
        return next(
            (
                i
                for i in reversed(self.incidents())
                if i["state"] in ("sick", "suspect")
                and i["kind"] == "machine"
                and placement.node_of(i["entity"]) == node
            ),
            None,
        )

    def room(self, placement: Placement, fleet: Fleet, nodes: list[NodeState] | None = None) -> Budget:
        """The pool's disruption budget counted in nodes: every node runnerctl holds takes a slot (an
        operator's drain too: it is the approval of what the loop would do). Raises ProviderError."""
        nodes = placement.nodes(fleet) if nodes is None else nodes
        return budget(
            fleet.pool,
            len(nodes),
            sum(1 for n in nodes if n.ours),
            sum(1 for n in nodes if n.unschedulable),
            self.policy_of(fleet.pool),
            sum(1 for n in nodes if n.ours and n.probation_since_ms),
        )

    # -- the pass -------------------------------------------------------------------------------------

    def tick(self) -> None:
        targets = self.targets()
        for incident, placement, fleet, node in targets:
            if self._storm(placement, fleet, targets):
                continue
            self._consider(incident, placement, fleet, node)
        for placement in self.placements.values():
            for fleet in {
                id(f): f for f in (placement.fleet(p) for p in self._pools(placement)) if f
            }.values():
                self.recovery.held(placement, fleet)

    def _pools(self, placement: Placement) -> list[str]:
        return sorted(getattr(placement, "fleets", {}))

    def _storm(self, placement: Placement, fleet: Fleet, targets: list[Target]) -> bool:
        sick = sorted({node for _i, _p, f, node in targets if f.pool == fleet.pool})
        try:
            size = len(placement.nodes(fleet))
        except ProviderError:
            return False  # judged again below, where every read fails closed
        ratio, least = self.storm
        if not is_storm(size, len(sick), ratio, least):
            return False
        self.actions.note(
            f"node-storm:{fleet.pool}:{','.join(sick)}",
            "fleet-incident",
            "refused",
            actor=CONTROLLER,
            reason=f"{len(sick)} of {size} nodes of pool {fleet.pool} sick at once: an outage, not sick nodes",
            detail="acting on no node until it passes; sick: " + ", ".join(sick),
        )
        return True

    def _consider(self, incident: dict[str, Any], placement: Placement, fleet: Fleet, node: str) -> None:
        policy = self.policy_of(fleet.pool)
        iid = incident["id"]
        what = f"node {node} is sick ({incident['dimension']}) in {iid}"
        if policy.mode != "auto":
            self._observe(incident, placement, fleet, node, policy.mode, what)
            return
        key = f"node-cordon:{iid}:{node}"
        placement.calls.clear()
        try:
            state = placement.node(node)
        except ProviderError as error:
            self._failed(key, iid, node, what, error, placement)
            return
        with self.engine.connect() as conn:
            cordoned_before = audit.status_of(conn, key) == "done"
        if cordoned_before and not state.ours:
            return  # cordoned for this incident, since given back (probation or a person): decided
        if state.unschedulable and not state.ours:
            self.actions.note(
                f"node-foreign:{iid}:{node}",
                "cordon",
                "skipped",
                reason=what,
                detail="cordoned by someone else (no runnerctl label): left as it is",
                **self.loop.fields(iid, node),
            )
            return
        if not (state.ours and state.unschedulable) and not self._cordon(
            incident, placement, fleet, node, policy, what
        ):
            return
        complete, _notes = self.drain_pods(self.loop, iid, iid, placement, fleet, node, what)
        if complete:
            self.rerun(self.loop, incident, policy)

    def _observe(
        self, incident: dict[str, Any], placement: Placement, fleet: Fleet, node: str, mode: str, what: str
    ) -> None:
        """observe and approve: say which calls a drain would make (read from the cluster), send none."""
        try:
            planned = calls_text(placement.planned(node, fleet))
        except ProviderError as error:
            planned = f"unknown: {error}"
        then = (
            f"an operator may approve it: runnerctl drain node/{node} --rerun"
            if mode == "approve"
            else "acting on nothing"
        )
        self.actions.note(
            f"node-{mode}:{incident['id']}:{node}",
            "cordon",
            "skipped",
            reason=what,
            detail=f"mode {mode}: {then}; a drain would send: {planned}",
            **(self.loop.fields(incident["id"], node) | {"mode": mode}),
        )

    def _cordon(
        self,
        incident: dict[str, Any],
        placement: Placement,
        fleet: Fleet,
        node: str,
        policy: Policy,
        what: str,
    ) -> bool:
        iid = incident["id"]
        key = f"node-cordon:{iid}:{node}"
        if self.actions.waiting(key):
            return False
        try:
            room = self.room(placement, fleet)
        except ProviderError as error:
            self._failed(key, iid, node, what, error, placement)
            return False
        fields = self.loop.fields(iid, node)
        if not room.allows:
            self.actions.note(
                f"node-refused:{iid}:{node}",
                "cordon",
                "refused",
                reason=what,
                detail=room.explain(),
                **fields,
            )
            return False
        if fleet.dry_run:
            try:
                planned = calls_text(placement.planned(node, fleet))
            except ProviderError as error:
                planned = f"unknown: {error}"
            self.actions.note(
                f"node-dry-run:{iid}:{node}",
                "cordon",
                "dry-run",
                reason=what,
                detail=f"would send: {planned}",
                **fields,
            )
            return False
        reason = f"{iid}: sick ({incident['dimension']})"
        return (
            self.cordon_node(self.loop, key, iid, placement, fleet, node, what, reason, room.explain())
            is None
        )

    def cordon_node(
        self,
        who: Acting,
        key: str,
        incident_id: str | None,
        placement: Placement,
        fleet: Fleet,
        node: str,
        what: str,
        reason: str,
        note: str,
    ) -> ProviderError | None:
        """The cordon itself, audited before the PATCH and finished with every call since the caller
        cleared `placement.calls` (the reads that decided it too); the error when it failed (closed)."""
        entry = who.actions.begin(key, "cordon", reason=what, detail=note, **who.fields(incident_id, node))
        try:
            placement.cordon(node, fleet, incident_id or "", reason, by=who.actor)
        except ProviderError as error:
            audit.finish(
                self.engine,
                entry.id,
                "failed",
                f"{who.actions.defer(key, error)}; calls: {calls_text(placement.calls)}",
            )
            return error
        who.actions.succeeded(key)
        done = f"calls: {calls_text(placement.calls)}"
        audit.finish(self.engine, entry.id, "done", f"{note}; {done}" if note else done)
        return None

    def drain_pods(
        self, who: Acting, tag: str, iid: str | None, placement: Placement, fleet: Fleet, node: str, what: str
    ) -> tuple[bool, list[str]]:
        """Delete the node's idle runners, each audited before its DELETE under a key tagged `tag`; busy
        ones are left to finish. (True once none idle is left to take a rerun there, what happened.)"""
        placement.calls.clear()
        try:
            pods = placement.runner_pods(node, fleet)
            state = placement.node(node)
        except ProviderError as error:
            log.warning("drain of %s: %s", node, error)
            return False, [f"the runner pods on it could not be read: {error}"]
        fields = who.fields(iid, node)
        idle_left = False
        notes: list[str] = []
        for pod in (p for p in pods if not p.busy):
            key = f"node-evict:{tag}:{pod.namespace}/{pod.name}"
            entry = who.actions.begin(
                key, "evict", reason=f"{what}: idle runner {pod.name} ({pod.why})", **fields
            )
            if not entry.new and entry.status == "done":
                continue
            if not entry.new:
                audit.retry(self.engine, entry.id)  # attempted again: intended once more, before the call
            listed = calls_text(placement.calls)
            placement.calls.clear()
            try:
                gone = placement.remove(pod)
            except ProviderError as error:
                idle_left = True
                notes.append(f"idle runner {pod.namespace}/{pod.name} not deleted: {error}")
                audit.finish(
                    self.engine,
                    entry.id,
                    "failed",
                    f"{error}; calls: {listed}; {calls_text(placement.calls)}",
                )
                continue
            note = "deleted" if gone else "gone already"
            notes.append(f"idle runner {pod.namespace}/{pod.name} {note} ({pod.why})")
            audit.finish(
                self.engine, entry.id, "done", f"{note}; calls: {listed}; {calls_text(placement.calls)}"
            )
        busy = [p for p in pods if p.busy]
        if busy:
            names = ", ".join(f"{p.name} ({p.why})" for p in busy)
            notes.append(f"left to finish: {names}")
            who.actions.note(
                f"node-busy:{tag}:{node}",
                "drain",
                "done",
                reason=what,
                detail=f"left to finish: {names}",
                **fields,
            )
            started = state.cordoned_at_ms or now_ms()
            if now_ms() - started > fleet.drain_timeout_s * 1000:
                who.actions.note(
                    f"node-drain-timeout:{tag}:{node}",
                    "drain",
                    "failed",
                    reason=what,
                    detail=f"still busy after {fleet.drain_timeout_s:.0f} s: {names}; left running (a job is never "
                    "killed by runnerctl), the node stays cordoned",
                    **fields,
                )
        return not idle_left, notes

    def rerun(
        self, who: Acting, incident: dict[str, Any], policy: Policy, dry_run: bool = False
    ) -> list[str]:
        """Rerun the incident's failed jobs (of its ephemeral runner pods) through the CI provider."""
        runners = sorted({j["runner_id"] for j in incident.get("affected_jobs", []) if j.get("runner_id")})
        notes: list[str] = []
        for runner in runners:
            notes += who.actions.rerun_jobs(
                incident,
                runner,
                actor=who.actor,
                mode=who.mode,
                cap=policy.max_reruns_per_job,
                dry_run=dry_run,
            )
        return notes

    def _failed(
        self, key: str, iid: str, node: str, what: str, error: ProviderError, placement: Placement
    ) -> None:
        if self.actions.waiting(key):
            return
        detail = f"fail closed: {self.actions.defer(key, error)}; calls: {calls_text(placement.calls)}"
        self.actions.note(
            f"deferred:{key}",
            "cordon",
            "failed",
            reason=what,
            detail=detail,
            **self.loop.fields(iid, node),
        )
