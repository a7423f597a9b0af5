"""What operators ask of a Kubernetes node (`runnerctl cordon|uncordon|drain node/NAME`): the loop's own
steps (nodes.py) taken as the operator, a drain within the pool's budget, each write audited before it is
sent. A dry run reads what the real one would and lists the writes it would send; it sends none.

A node is found in the first fleet whose nodes (its `node_selector`) list it: one list call per fleet.
A node someone else cordoned (no runnerctl label) is never taken over; only a forced uncordon lifts it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from controller.errors import ProviderError, RunnerNotFound
from controller.placement.base import ApiCall, Fleet, NodeState, Placement, PlannedVerb
from controller.remediation import audit
from controller.remediation.actions import CONTROLLER, Actions, Result
from controller.remediation.audit import now_ms
from controller.remediation.node_probation import calls_text
from controller.remediation.nodes import Acting, NodeDrains
from controller.remediation.policy import Policy

FOREIGN = "cordoned by someone else, not runnerctl (no runnerctl.io/cordoned label)"


class NodeNotPlaced(Exception):
    """No configured fleet covers the node: 404 when the cluster does not know it either, else 409."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Located:
    placement: Placement
    fleet: Fleet
    state: NodeState
    nodes: list[NodeState]  # the fleet's nodes as just read: the budget counts them


@dataclass
class NodeAnswer:
    result: Result
    pool: str
    dry_run: bool
    calls: list[ApiCall] = field(default_factory=list)  # a dry run's writes, not sent
    notes: list[str] = field(default_factory=list)
    budget: dict[str, Any] | None = None


def locate(placements: dict[str, Placement], name: str) -> Located:
    """The fleet that holds the node. Raises NodeNotPlaced, or ProviderError when the cluster cannot say."""
    if not placements:
        raise NodeNotPlaced(
            404,
            "no Kubernetes placement is configured (RUNNER_CONTROLLER_PLACEMENTS): the controller manages no nodes",
        )
    for placement in placements.values():
        for pool in sorted(placement.fleets):
            fleet = placement.fleets[pool]
            nodes = placement.nodes(fleet)
            found = next((n for n in nodes if n.name == name), None)
            if found is not None:
                return Located(placement, fleet, found, nodes)
    for placement in placements.values():
        try:
            placement.node(name)
        except RunnerNotFound:
            continue
        selectors = ", ".join(
            f"{pool}: {fleet.node_selector or '<every node>'}"
            for pool, fleet in sorted(placement.fleets.items())
        )
        raise NodeNotPlaced(
            409, f"node {name} is in the cluster but in no configured fleet (node selectors: {selectors})"
        )
    raise NodeNotPlaced(
        404, f"node '{name}' not found in the cluster (runnerctl get nodes lists the fleets' nodes)"
    )


class NodeOperators:
    def __init__(self, drains: NodeDrains, actions: Actions, lock: threading.Lock) -> None:
        self.drains = drains
        self.actions = actions  # unfenced: an operator's request is served by any replica
        # The loop's lock: one actor at a time on a node, and `placement.calls` is shared with the loop.
        self.lock = lock

    def _where(self, name: str) -> Located:
        for placement in self.drains.placements.values():
            placement.calls.clear()  # the audit entry lists the reads that decided it
        return locate(self.drains.placements, name)

    def _dry(self, where: Located, name: str, verb: PlannedVerb, status: str, dry_run: bool) -> NodeAnswer:
        why = "dry run" if dry_run else f"fleet {where.fleet.pool} is dry_run"
        calls = where.placement.planned(name, where.fleet, verb)
        return NodeAnswer(Result(status, f"{why}: nothing sent"), where.fleet.pool, True, calls)

    def cordon(self, name: str, actor: str, reason: str, dry_run: bool) -> NodeAnswer:
        """A person's plain cordon: not bound by the budget (it binds drains), like a runner's."""
        with self.lock:
            where = self._where(name)
            state, pool = where.state, where.fleet.pool
            if state.unschedulable and not state.ours:
                return NodeAnswer(Result("already cordoned", f"{FOREIGN}: left as it is"), pool, dry_run)
            if state.unschedulable:
                return NodeAnswer(Result("already cordoned", _held(state)), pool, dry_run)
            if dry_run or where.fleet.dry_run:
                return self._dry(where, name, "cordon", "cordoned", dry_run)
            who = Acting(actor, self.actions, None)
            key = f"node-cordon:manual:{name}:{now_ms()}"
            error = self.drains.cordon_node(
                who, key, None, where.placement, where.fleet, name, reason, reason, ""
            )
            if error is not None:
                return NodeAnswer(Result("failed", f"{error}; nothing changed", ok=False), pool, False)
            return NodeAnswer(self.actions.counted("cordon", actor, Result("cordoned")), pool, False)

    def uncordon(self, name: str, actor: str, dry_run: bool, force: bool) -> NodeAnswer:
        with self.lock:
            where = self._where(name)
            state, pool = where.state, where.fleet.pool
            if not state.unschedulable and not state.ours:
                return NodeAnswer(Result("already uncordoned"), pool, dry_run)
            refusal = self._refusal(where, name, force)
            if refusal is not None:
                return NodeAnswer(Result("refused", refusal, ok=False), pool, dry_run)
            if dry_run or where.fleet.dry_run:
                return self._dry(where, name, "uncordon", "uncordoned", dry_run)
            # Back in rotation already: the operator's word ends its probation, as if its probe passed.
            trial = state.ours and not state.unschedulable
            what = f"uncordoned by {actor}" + (" (probation passed by operator)" if trial else "")
            key = f"node-uncordon:manual:{name}:{now_ms()}"
            entry = self.actions.begin(
                key,
                "uncordon",
                reason=what,
                **Acting(actor, self.actions, None).fields(state.incident or None, name),
            )
            try:
                if trial:
                    where.placement.release(name)
                else:
                    where.placement.uncordon(name, where.fleet, probation_since_ms=None, force=not state.ours)
            except ProviderError as error:
                audit.finish(
                    self.drains.engine,
                    entry.id,
                    "failed",
                    f"{error}; calls: {calls_text(where.placement.calls)}",
                )
                return NodeAnswer(Result("failed", f"{error}; nothing changed", ok=False), pool, False)
            audit.finish(
                self.drains.engine, entry.id, "done", f"{what}; calls: {calls_text(where.placement.calls)}"
            )
            return NodeAnswer(self.actions.counted("uncordon", actor, Result("uncordoned")), pool, False)

    def _refusal(self, where: Located, name: str, force: bool) -> str | None:
        state = where.state
        if force:
            return None
        if not state.ours:
            return f"node/{name} was {FOREIGN}: runnerctl leaves it alone; uncordon it anyway with --force"
        incident = self.drains.incident_of(where.placement, name)
        if (
            state.unschedulable
            and state.cordoned_by in (None, CONTROLLER)
            and incident
            and incident["state"] == "sick"
        ):
            return (
                f"node/{name} is still sick ({incident['dimension']}) in {incident['id']}; "
                "uncordon it anyway with --force"
            )
        return None

    def drain(
        self, name: str, actor: str, reason: str, rerun: bool, dry_run: bool, ignore_budget: bool
    ) -> NodeAnswer:
        """Cordon (within the pool's budget unless `ignore_budget`), delete idle runner pods, leave busy
        ones, then rerun the failed jobs of the node's newest incident: in `approve` the operator's
        approval of what the loop does in `auto`."""
        with self.lock:
            where = self._where(name)
            state, pool, placement, fleet = where.state, where.fleet.pool, where.placement, where.fleet
            if state.unschedulable and not state.ours:
                why = f"node/{name} is {FOREIGN}: runnerctl neither takes it over nor drains it (use kubectl)"
                return NodeAnswer(Result("refused", why, ok=False), pool, dry_run)
            room = self.drains.room(placement, fleet, where.nodes)
            held = state.ours and state.unschedulable
            if not held and not room.allows and not ignore_budget:
                why = f"{room.explain()}; drain it anyway with --ignore-budget"
                return NodeAnswer(Result("refused", why, ok=False), pool, dry_run, budget=room.as_dict())
            incident = self.drains.incident_of(placement, name)
            policy = self.drains.policy_of(pool)
            who = Acting(actor, self.actions, None)
            status = "already cordoned" if held else "cordoned"
            if dry_run or fleet.dry_run:
                answer = self._dry(where, name, "drain", status, dry_run)
                answer.budget = room.as_dict()
                answer.notes = self._reruns(who, incident, policy, rerun, dry=True)
                return answer
            iid = incident["id"] if incident else None
            if not held:
                key = f"node-cordon:manual:{name}:{now_ms()}"
                error = self.drains.cordon_node(
                    who, key, iid, placement, fleet, name, reason, reason, room.explain()
                )
                if error is not None:
                    failed = Result("failed", f"{error}; nothing changed", ok=False)
                    return NodeAnswer(self.actions.counted("drain", actor, failed), pool, False)
            tag = f"manual:{name}:{now_ms()}"
            complete, notes = self.drains.drain_pods(who, tag, iid, placement, fleet, name, reason)
            if not complete:
                why = f"cordoned, but idle runners are left on it ({'; '.join(notes)}); no rerun; drain it again"
                return NodeAnswer(
                    self.actions.counted("drain", actor, Result("failed", why, ok=False)), pool, False
                )
            notes += self._reruns(who, incident, policy, rerun, dry=False)
            result = self.actions.counted("drain", actor, Result(status))
            return NodeAnswer(result, pool, False, notes=notes, budget=room.as_dict())

    def _reruns(
        self, who: Acting, incident: dict[str, Any] | None, policy: Policy, rerun: bool, dry: bool
    ) -> list[str]:
        if not rerun:
            return []
        if incident is None:
            return ["no open incident on this node: no failed jobs to rerun"]
        return self.drains.rerun(who, incident, policy, dry_run=dry)


def _held(state: NodeState) -> str:
    by = state.cordoned_by or CONTROLLER
    return f"by {by}" + (f" for {state.incident}" if state.incident else "")
