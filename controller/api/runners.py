"""GET /v1/runners and GET /v1/runners/{id}: identity, health, last readings, last seen."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy import case, func, select
from sqlalchemy.engine import Connection, Row

from common.api import Health, RunnerList, RunnerView
from common.identity import StoredIdentity
from common.timeutil import iso
from controller.analysis.engine import Analysis
from controller.api.auth import READ_ROLES, require
from controller.api.errors import ApiError
from controller.api.job_stats import JobStats, job_stats, window_start_ms
from controller.db import tables
from controller.remediation.holds import Hold
from controller.selectors import SELECTOR_PATTERN, Selector, parse_selector
from controller.tokens import Principal

router = APIRouter(prefix="/v1/runners", tags=["runners"])


def identity_of(row: Row[Any]) -> StoredIdentity:
    return StoredIdentity(
        id=row.id,
        name=row.name,
        machine=row.machine,
        pool=row.pool,
        image=row.image,
        shard=row.shard,
        labels=tuple(json.loads(row.labels or "[]")),
        provider=row.provider,
        ephemeral=bool(row.ephemeral),
    )


def last_readings(conn: Connection, runner_id: str) -> list[dict[str, Any]]:
    t = tables.readings
    newest = (
        select(t.c.check, func.max(t.c.observed_ms).label("observed_ms"))
        .where(t.c.runner_id == runner_id)
        .group_by(t.c.check)
        .subquery()
    )
    rows = conn.execute(
        select(t.c.check, t.c.observed_ms, t.c.data)
        .join(newest, (t.c.check == newest.c.check) & (t.c.observed_ms == newest.c.observed_ms))
        .where(t.c.runner_id == runner_id)
        .order_by(t.c.check, t.c.id.desc())
    )
    seen: dict[str, dict[str, Any]] = {}
    for check, observed_ms, data in rows:
        if check not in seen:
            seen[check] = {"observed_at": iso(observed_ms), **json.loads(data)}
    return list(seen.values())


def execution_counts(conn: Connection, runner_id: str | None = None) -> dict[str, tuple[int, int]]:
    t = tables.results
    failed = func.sum(case((t.c.outcome.in_(("failed", "error")), 1), else_=0))
    query = (
        select(t.c.runner_id, func.count(), failed).where(t.c.outcome != "skipped").group_by(t.c.runner_id)
    )
    if runner_id is not None:
        query = query.where(t.c.runner_id == runner_id)
    return {rid: (int(n), int(f or 0)) for rid, n, f in conn.execute(query)}


def view(
    request: Request,
    conn: Connection,
    row: Row[Any],
    counts: tuple[int, int],
    with_readings: bool,
    jobs: JobStats | None = None,
    holds: dict[str, Hold] | None = None,
) -> RunnerView:
    health: Health = request.app.state.health_of(row.id)
    jobs = jobs or JobStats()
    hold = (holds or {}).get(row.id)
    return RunnerView(
        identity=identity_of(row),
        first_seen=iso(row.first_seen_ms),
        last_seen=iso(row.last_seen_ms),
        last_report_at=iso(row.last_report_ms),
        executions=counts[0],
        failures=counts[1],
        health=health,
        cordon=request.app.state.cordon_of(row.id),
        probation=request.app.state.remediator.probations.view(row.id),
        probe=request.app.state.remediator.probes.view(row.id),
        held=None if hold is None else hold.as_dict(),
        last_readings=last_readings(conn, row.id) if with_readings else [],
        jobs=jobs.jobs,
        job_failures=jobs.failures,
        job_failure_rate=jobs.failure_rate,
        median_job_duration_s=jobs.median_s,
    )


def jobs_since_ms(request: Request, conn: Connection, as_of_ms: int) -> int:
    return window_start_ms(conn, as_of_ms, request.app.state.settings.analysis_window_days)


@router.get("", response_model=RunnerList)
def list_runners(
    request: Request,
    _principal: Annotated[Principal, Depends(require(*READ_ROLES))],
    selector: Annotated[
        str | None,
        Query(
            alias="l",
            description="label selector, e.g. pool=linux,image!=old",
            # Documented, not enforced here: parse_selector refuses the rest with a clearer message.
            json_schema_extra={"pattern": SELECTOR_PATTERN},
        ),
    ] = None,
) -> RunnerList:
    try:
        wanted: Selector = parse_selector(selector or "")
    except ValueError as error:
        raise ApiError(422, f"selector: {error}") from error
    as_of_ms = _analysed(request).as_of_ms
    with request.app.state.engine.connect() as conn:
        rows = conn.execute(select(tables.runners).order_by(tables.runners.c.id)).all()
        counts = execution_counts(conn)
        stats = job_stats(conn, jobs_since_ms(request, conn, as_of_ms))
        holds = request.app.state.remediator.holds()
        items = [
            view(request, conn, row, counts.get(row.id, (0, 0)), False, stats.get(row.id), holds)
            for row in rows
        ]
    return RunnerList(items=[item for item in items if wanted.matches(item)])


@router.get("/{runner_id}", response_model=RunnerView)
def get_runner(
    request: Request, runner_id: str, _principal: Annotated[Principal, Depends(require(*READ_ROLES))]
) -> RunnerView:
    as_of_ms = _analysed(request).as_of_ms
    with request.app.state.engine.connect() as conn:
        row = conn.execute(select(tables.runners).where(tables.runners.c.id == runner_id)).first()
        if row is None:
            raise ApiError(404, f"runner '{runner_id}' not found")
        counts = execution_counts(conn, runner_id).get(runner_id, (0, 0))
        stats = job_stats(conn, jobs_since_ms(request, conn, as_of_ms), runner_id).get(runner_id)
        return view(request, conn, row, counts, True, stats, request.app.state.remediator.holds())


def _analysed(request: Request) -> Analysis:
    if request.app.state.settings.fresh_reads:
        return request.app.state.analysis.refresh()  # type: ignore[no-any-return]
    return request.app.state.analysis.served()  # type: ignore[no-any-return]
