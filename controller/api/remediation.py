"""Cordon, uncordon and drain runners (operators), and the audit log of every action taken or not."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import select

from common.remediation import ActionAnswer, CordonRequest, DrainRequest, UncordonRequest
from controller.api.auth import OPERATE_ROLES, READ_ROLES, require
from controller.api.errors import ApiError
from controller.db import tables
from controller.remediation import audit, store
from controller.remediation.actions import Result
from controller.remediation.audit import now_ms
from controller.remediation.loop import Remediator
from controller.selectors import RecordFields, field_of, record_selector_pattern, select_records
from controller.tokens import Principal

ACTION_FIELDS: RecordFields = {
    key: field_of(key) for key in ("action", "status", "runner", "incident", "job", "actor", "mode")
}

router = APIRouter(prefix="/v1", tags=["remediation"])
Operator = Annotated[Principal, Depends(require(*OPERATE_ROLES))]
Reader = Annotated[Principal, Depends(require(*READ_ROLES))]


def remediator(request: Request) -> Remediator:
    found: Remediator = request.app.state.remediator
    return found


def _known(request: Request, runner_id: str) -> None:
    with request.app.state.engine.connect() as conn:
        row = conn.execute(select(tables.runners.c.id).where(tables.runners.c.id == runner_id)).first()
    if row is None:
        raise ApiError(404, f"runner '{runner_id}' not found (runnerctl get runners lists the known ones)")


def _answer(request: Request, runner_id: str, result: Result, dry_run: bool, **extra: Any) -> ActionAnswer:
    if not result.ok:
        status = 409 if result.status == "refused" else 503
        # A dry run is refused (or fails closed) exactly where the real one would, and says so.
        verb = "would not be changed (dry run)" if dry_run else "not changed"
        raise ApiError(status, f"runner/{runner_id} {verb}: {result.detail}")
    with request.app.state.engine.connect() as conn:
        cordon = store.cordon_of(conn, runner_id)
    return ActionAnswer(
        runner=runner_id, status=result.status, dry_run=dry_run, detail=result.detail, cordon=cordon, **extra
    )


@router.post("/runners/{runner_id}/cordon", response_model=ActionAnswer)
async def cordon(request: Request, runner_id: str, body: CordonRequest, who: Operator) -> ActionAnswer:
    """Take a runner out of rotation (the provider pauses it; its current job finishes)."""
    _known(request, runner_id)
    expires = now_ms() + int(body.expires_in_s * 1000) if body.expires_in_s else None
    reason = body.reason or f"cordoned by {who.name}"
    result, room = await run_in_threadpool(
        remediator(request).cordon, runner_id, who.name, reason, expires, body.dry_run
    )
    return _answer(request, runner_id, result, body.dry_run, budget=room)


@router.post("/runners/{runner_id}/uncordon", response_model=ActionAnswer)
async def uncordon(request: Request, runner_id: str, body: UncordonRequest, who: Operator) -> ActionAnswer:
    """Put a runner back into rotation, whoever cordoned it."""
    _known(request, runner_id)
    result = await run_in_threadpool(
        remediator(request).uncordon, runner_id, who.name, body.dry_run, body.force
    )
    return _answer(request, runner_id, result, body.dry_run)


@router.post("/runners/{runner_id}/drain", response_model=ActionAnswer)
async def drain(request: Request, runner_id: str, body: DrainRequest, who: Operator) -> ActionAnswer:
    """Cordon, then rerun the jobs that failed on it during its incident: an operator's approval."""
    _known(request, runner_id)
    reason = body.reason or f"drained by {who.name}"
    result, notes, room = await run_in_threadpool(
        remediator(request).drain, runner_id, who.name, reason, body.rerun, body.dry_run, body.ignore_budget
    )
    return _answer(request, runner_id, result, body.dry_run, notes=notes, budget=room)


@router.get("/actions")
def list_actions(
    request: Request,
    _p: Reader,
    runner: str | None = None,
    incident: str | None = None,
    action: Annotated[
        str | None, Query(description="cordon, uncordon, rerun, rerun-result, clear-flakes, ...")
    ] = None,
    status: Annotated[
        str | None, Query(description="intended, done, failed, refused, skipped, deferred")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 500,
    selector: Annotated[
        str | None,
        Query(
            alias="l",
            description="selector over the newest `limit` entries, e.g. status!=done",
            json_schema_extra={"pattern": record_selector_pattern(ACTION_FIELDS)},
        ),
    ] = None,
) -> dict[str, Any]:
    """The audit log, newest first: every action attempted, refused or skipped, and why."""
    with request.app.state.engine.connect() as conn:
        items = audit.listing(
            conn, runner_id=runner, incident_id=incident, action=action, status=status, limit=limit
        )
    try:
        return {"items": select_records(selector, items, ACTION_FIELDS)}
    except ValueError as error:
        raise ApiError(422, f"selector: {error}") from error


@router.get("/clearances")
def list_clearances(request: Request, _p: Reader) -> dict[str, Any]:
    """Flake clearances: incidents whose jobs reran green elsewhere, and the tests they clear."""
    with request.app.state.engine.connect() as conn:
        return {"items": store.clearances(conn)}


def remediation_of(request: Request, runner_id: str) -> dict[str, Any]:
    """For `explain runner`: the pool's mode and budget, and the last decisions about this runner."""
    rem = remediator(request)
    pool = rem.pool_of(runner_id)
    with request.app.state.engine.connect() as conn:
        decisions = audit.listing(conn, runner_id=runner_id, limit=20)
        reruns = [
            {"job": r.job_id, "rerun_as": r.new_job_id, "state": r.state, "incident": r.incident_id}
            for r in store.reruns(conn)
            if r.runner_id == runner_id
        ]
    provider = rem.provider_for(runner_id)
    return {
        "mode": rem.policy(pool).mode,
        "budget": rem.budget(pool).as_dict(),
        "actions": decisions,
        "reruns": reruns,
        "probation": rem.probations.view(runner_id),
        "probe": rem.probes.view(runner_id),
        # What a cordon can and cannot do through this runner's provider (GitHub has no pause).
        "provider": None
        if provider is None
        else {"name": provider.NAME, "cordon_limits": getattr(provider, "CORDON_LIMITS", None)},
    }
