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
from typing import Any

from sqlalchemy.engine import Engine

from controller.errors import ProviderError
from controller.placement.base import Fleet, Placement
from controller.remediation import audit
from controller.remediation.actions import CONTROLLER, Actions
from controller.remediation.audit import now_ms
from controller.remediation.node_probation import NodeRecovery, calls_text
from controller.remediation.policy import Policy, budget, is_storm

log = logging.getLogger(__name__)
Target = tuple[dict[str, Any], Placement, Fleet, str]


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

    def _fields(self, incident_id: str | None, node: str, mode: str | None) -> dict[str, Any]:
        return {"actor": CONTROLLER, "runner_id": f"node/{node}", "incident_id": incident_id, "mode": mode}

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
                **self._fields(iid, node, "auto"),
            )
            return
        if not (state.ours and state.unschedulable) and not self._cordon(
            incident, placement, fleet, node, policy, what
        ):
            return
        if self._drain(iid, placement, fleet, node, what):
            self._rerun(incident, policy)

    def _observe(
        self, incident: dict[str, Any], placement: Placement, fleet: Fleet, node: str, mode: str, what: str
    ) -> None:
        """observe and approve: say which calls a drain would make (read from the cluster), send none."""
        try:
            planned = calls_text(placement.planned(node, fleet))
        except ProviderError as error:
            planned = f"unknown: {error}"
        then = (
            "an operator may drain it (set the pool's mode to auto)"
            if mode == "approve"
            else "acting on nothing"
        )
        self.actions.note(
            f"node-{mode}:{incident['id']}:{node}",
            "cordon",
            "skipped",
            reason=what,
            detail=f"mode {mode}: {then}; a drain would send: {planned}",
            **self._fields(incident["id"], node, mode),
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
            nodes = placement.nodes(fleet)
        except ProviderError as error:
            self._failed(key, iid, node, what, error, placement)
            return False
        room = budget(
            fleet.pool,
            len(nodes),
            sum(1 for n in nodes if n.ours),
            sum(1 for n in nodes if n.unschedulable),
            policy,
            sum(1 for n in nodes if n.ours and n.probation_since_ms),
        )
        fields = self._fields(iid, node, "auto")
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
        entry = self.actions.begin(key, "cordon", reason=what, detail=room.explain(), **fields)
        try:
            placement.cordon(node, fleet, iid, f"{iid}: sick ({incident['dimension']})")
        except ProviderError as error:
            audit.finish(
                self.engine,
                entry.id,
                "failed",
                f"{self.actions.defer(key, error)}; calls: {calls_text(placement.calls)}",
            )
            return False
        self.actions.succeeded(key)
        audit.finish(self.engine, entry.id, "done", f"{room.explain()}; calls: {calls_text(placement.calls)}")
        return True

    def _drain(self, iid: str, placement: Placement, fleet: Fleet, node: str, what: str) -> bool:
        """Delete the node's idle runners; True once none is left to take a rerun there."""
        placement.calls.clear()
        try:
            pods = placement.runner_pods(node, fleet)
            state = placement.node(node)
        except ProviderError as error:
            log.warning("drain of %s: %s", node, error)
            return False
        fields = self._fields(iid, node, "auto")
        idle_left = False
        for pod in (p for p in pods if not p.busy):
            key = f"node-evict:{iid}:{pod.namespace}/{pod.name}"
            entry = self.actions.begin(
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
                audit.finish(
                    self.engine,
                    entry.id,
                    "failed",
                    f"{error}; calls: {listed}; {calls_text(placement.calls)}",
                )
                continue
            note = "deleted" if gone else "gone already"
            audit.finish(
                self.engine, entry.id, "done", f"{note}; calls: {listed}; {calls_text(placement.calls)}"
            )
        busy = [p for p in pods if p.busy]
        if busy:
            names = ", ".join(f"{p.name} ({p.why})" for p in busy)
            self.actions.note(
                f"node-busy:{iid}:{node}",
                "drain",
                "done",
                reason=what,
                detail=f"left to finish: {names}",
                **fields,
            )
            started = state.cordoned_at_ms or now_ms()
            if now_ms() - started > fleet.drain_timeout_s * 1000:
                self.actions.note(
                    f"node-drain-timeout:{iid}:{node}",
                    "drain",
                    "failed",
                    reason=what,
                    detail=f"still busy after {fleet.drain_timeout_s:.0f} s: {names}; left running (a job is never "
                    "killed by runnerctl), the node stays cordoned",
                    **fields,
                )
        return not idle_left

    def _rerun(self, incident: dict[str, Any], policy: Policy) -> None:
        runners = sorted({j["runner_id"] for j in incident.get("affected_jobs", []) if j.get("runner_id")})
        for runner in runners:
            self.actions.rerun_jobs(
                incident, runner, actor=CONTROLLER, mode="auto", cap=policy.max_reruns_per_job
            )

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
            **self._fields(iid, node, "auto"),
        )
