"""Kubernetes nodes of the configured fleets: list and describe them, and cordon, uncordon and drain one
as an operator, through the same steps as the controller's own node drains (remediation/node_operators.py).

Reads are cheap on purpose: a listing is one node list and one runner pod list per fleet (plus ARC's
EphemeralRunners); a cluster that cannot be read is a 503 that says so, never an empty list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request
from fastapi.concurrency import run_in_threadpool

from common.api import NodeList, NodePod, NodeView
from common.remediation import DrainRequest, NodeActionAnswer, NodeCordonRequest, NodeUncordonRequest
from common.timeutil import iso
from controller.api.auth import OPERATE_ROLES, READ_ROLES, require
from controller.api.errors import ApiError
from controller.errors import ProviderError
from controller.placement.base import Fleet, NodeState, RunnerPod
from controller.remediation import audit
from controller.remediation.actions import CONTROLLER
from controller.remediation.loop import Remediator
from controller.remediation.node_operators import NodeAnswer, NodeNotPlaced, NodeOperators, locate
from controller.tokens import Principal

router = APIRouter(prefix="/v1/nodes", tags=["nodes"])
Operator = Annotated[Principal, Depends(require(*OPERATE_ROLES))]
Reader = Annotated[Principal, Depends(require(*READ_ROLES))]
# A Kubernetes node name is a DNS subdomain: checked here, so nothing else reaches a cluster API path.
NodeName = Annotated[
    str, Path(pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", description="the node's name")
]


def _remediator(request: Request) -> Remediator:
    found: Remediator = request.app.state.remediator
    return found


def _operators(request: Request) -> NodeOperators:
    rem = _remediator(request)
    return NodeOperators(rem.nodes, rem.operator_actions, rem.lock)


def view(fleet: Fleet, state: NodeState, pods: list[RunnerPod]) -> NodeView:
    if state.ours:
        by: str | None = state.cordoned_by or CONTROLLER
        status = "probation" if state.probation_since_ms and not state.unschedulable else "cordoned"
    else:
        by = "someone else" if state.unschedulable else None
        status = "cordoned by someone else" if state.unschedulable else "schedulable"
    return NodeView(
        name=state.name,
        pool=fleet.pool,
        runner=fleet.runner,
        status=status,
        cordoned=state.unschedulable,
        runnerctl=state.ours,
        cordoned_by=by,
        tainted=state.tainted,
        incident=state.incident or None,
        cordoned_at=iso(state.cordoned_at_ms),
        probation_since=iso(state.probation_since_ms),
        busy=sum(1 for p in pods if p.busy),
        idle=sum(1 for p in pods if not p.busy),
        pods=[NodePod(namespace=p.namespace, name=p.name, busy=p.busy, why=p.why) for p in pods],
    )


def _listing(rem: Remediator) -> list[NodeView]:
    placements = rem.nodes.placements
    if not placements:
        locate(placements, "")  # raises the NodeNotPlaced that says no placement is configured
    found: dict[str, NodeView] = {}
    # No loop lock: reads change nothing, and each thread records its own calls (placement/kubernetes.py).
    for placement in placements.values():
        for pool in sorted(placement.fleets):
            fleet = placement.fleets[pool]
            pods = placement.fleet_pods(fleet)
            for state in placement.nodes(fleet):
                found.setdefault(state.name, view(fleet, state, pods.get(state.name, [])))
    return sorted(found.values(), key=lambda n: n.name)


def _one(rem: Remediator, name: str) -> NodeView:
    where = locate(rem.nodes.placements, name)
    pods = where.placement.runner_pods(name, where.fleet)
    shown = view(where.fleet, where.state, pods)
    with rem.engine.connect() as conn:
        shown.actions = audit.listing(conn, runner_id=f"node/{name}", limit=50)
    return shown


def _read_failed(error: ProviderError) -> ApiError:
    return ApiError(503, f"the cluster could not be read: {error}")


@router.get("", response_model=NodeList)
async def list_nodes(request: Request, _p: Reader) -> NodeList:
    """The fleets' nodes: who cordoned them, runnerctl's taint, incident, probation, runner pods."""
    try:
        return NodeList(items=await run_in_threadpool(_listing, _remediator(request)))
    except NodeNotPlaced as error:
        raise ApiError(error.status, error.message) from None
    except ProviderError as error:
        raise _read_failed(error) from None


@router.get("/{name}", response_model=NodeView)
async def get_node(request: Request, name: NodeName, _p: Reader) -> NodeView:
    """One node as listed, its runner pods and its audit entries (runner `node/<name>`)."""
    try:
        return await run_in_threadpool(_one, _remediator(request), name)
    except NodeNotPlaced as error:
        raise ApiError(error.status, error.message) from None
    except ProviderError as error:
        raise _read_failed(error) from None


async def _act(name: str, dry_run: bool, call: Callable[..., NodeAnswer], *args: object) -> NodeActionAnswer:
    try:
        answer = await run_in_threadpool(call, *args)
    except NodeNotPlaced as error:
        raise ApiError(error.status, error.message) from None
    except ProviderError as error:  # fail closed: what cannot be read is not acted on
        raise ApiError(503, f"node/{name} not changed: {error}; no action taken") from None
    result = answer.result
    if not result.ok:
        verb = "would not be changed (dry run)" if dry_run else "not changed"
        raise ApiError(409 if result.status == "refused" else 503, f"node/{name} {verb}: {result.detail}")
    return NodeActionAnswer(
        node=name,
        pool=answer.pool,
        status=result.status,
        dry_run=answer.dry_run,
        detail=result.detail,
        calls=[str(c) for c in answer.calls],
        notes=answer.notes,
        budget=answer.budget,
    )


@router.post("/{name}/cordon", response_model=NodeActionAnswer)
async def cordon(
    request: Request, name: NodeName, body: NodeCordonRequest, who: Operator
) -> NodeActionAnswer:
    """Mark the node unschedulable (and taint it) as runnerctl's; its runner pods are left alone."""
    reason = body.reason or f"cordoned by {who.name}"
    return await _act(name, body.dry_run, _operators(request).cordon, name, who.name, reason, body.dry_run)


@router.post("/{name}/uncordon", response_model=NodeActionAnswer)
async def uncordon(
    request: Request, name: NodeName, body: NodeUncordonRequest, who: Operator
) -> NodeActionAnswer:
    """Schedulable again; 409 for a node still sick or cordoned by someone else, unless `force`."""
    ops = _operators(request)
    return await _act(name, body.dry_run, ops.uncordon, name, who.name, body.dry_run, body.force)


@router.post("/{name}/drain", response_model=NodeActionAnswer)
async def drain(request: Request, name: NodeName, body: DrainRequest, who: Operator) -> NodeActionAnswer:
    """Cordon within the pool's budget, delete idle runner pods, leave busy ones, rerun failed jobs."""
    reason = body.reason or f"drained by {who.name}"
    ops = _operators(request)
    args = (name, who.name, reason, body.rerun, body.dry_run, body.ignore_budget)
    return await _act(name, body.dry_run, ops.drain, *args)
