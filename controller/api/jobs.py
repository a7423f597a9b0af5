"""POST /v1/jobs (JSON array or NDJSON): finished CI jobs, the evidence no test result carries;
GET /v1/jobs: the stored ones, newest first."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select
from sqlalchemy.engine import Row

from common.api import JobList, JobView, ResultsAccepted
from common.jobs import JobConclusion, JobRecord
from common.timeutil import EventTime, iso, to_ms
from controller.api.auth import INGEST_ROLES, READ_ROLES, require
from controller.api.body import body_schema, read_bounded
from controller.api.errors import ApiError
from controller.api.results import parse_records
from controller.db import tables
from controller.selectors import RecordFields, field_of, record_selector_pattern, select_records
from controller.tokens import Principal

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

_JOBS_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "array", "items": body_schema(JobRecord)}},
            "application/x-ndjson": {
                "schema": {
                    "type": "array",
                    "items": body_schema(JobRecord),
                    "minItems": 1,
                    "description": "one job record per line",
                }
            },
        },
    }
}


@router.post("", response_model=ResultsAccepted, openapi_extra=_JOBS_BODY)
async def post_jobs(
    request: Request, _principal: Annotated[Principal, Depends(require(*INGEST_ROLES))]
) -> ResultsAccepted:
    settings = request.app.state.settings
    body = await read_bounded(request, settings.max_body_bytes)
    content_type = request.headers.get("content-type", "")
    records = parse_records(JobRecord, body, content_type, settings.max_results_per_request, "job")
    return await run_in_threadpool(request.app.state.ingest.jobs, records)


# The fields `l=` may name, as `GET /v1/jobs` lists them.
JOB_FIELDS: RecordFields = {
    "job": field_of("job_id"),
    "run": field_of("run_id"),
    "attempt": field_of("attempt"),
    "name": field_of("name"),
    "conclusion": field_of("conclusion"),
    "step": field_of("failed_step"),
    "reason": field_of("failure_reason"),
    "runner": field_of("runner"),
    "pool": field_of("pool"),
    "machine": field_of("machine"),
    "provider": field_of("provider"),
}
_SINCE = TypeAdapter(EventTime)
_CONCLUSION = "(" + "|".join(sorted(c.value for c in JobConclusion)) + ")"
CONCLUSIONS_PATTERN = rf"^{_CONCLUSION}(,{_CONCLUSION})*$"


@router.get("", response_model=JobList)
def list_jobs(
    request: Request,
    _principal: Annotated[Principal, Depends(require(*READ_ROLES))],
    runner: Annotated[str | None, Query(description="runner ids, comma-separated")] = None,
    pool: Annotated[str | None, Query(description="pools, comma-separated")] = None,
    conclusion: Annotated[
        str | None,
        Query(
            description="success, failure, cancelled, timed_out, system_failure (comma-separated)",
            json_schema_extra={"pattern": CONCLUSIONS_PATTERN},
        ),
    ] = None,
    name: Annotated[str | None, Query(description="job names, comma-separated")] = None,
    since: Annotated[
        str | None,
        Query(
            description="finished at or after this time (RFC 3339 or epoch seconds)",
            json_schema_extra={"format": "date-time"},
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 500,
    selector: Annotated[
        str | None,
        Query(
            alias="l",
            description="selector over the newest `limit` jobs, e.g. conclusion!=success,runner=linux-03",
            json_schema_extra={"pattern": record_selector_pattern(JOB_FIELDS)},
        ),
    ] = None,
) -> JobList:
    """Stored job records, newest finish first."""
    wanted = {"conclusion": _conclusions(conclusion), "runner_id": runner, "pool": pool, "name": name}
    t = tables.jobs
    query = select(t).order_by(t.c.finished_ms.desc(), t.c.id.desc()).limit(limit)
    for column, value in wanted.items():
        if value:
            query = query.where(t.c[column].in_(value.split(",")))
    if since:
        query = query.where(t.c.finished_ms >= to_ms(_since(since)))
    with request.app.state.engine.connect() as conn:
        items = [_view(row).model_dump() for row in conn.execute(query)]
    try:
        return JobList.model_validate({"items": select_records(selector, items, JOB_FIELDS)})
    except ValueError as error:
        raise ApiError(422, f"selector: {error}") from error


def _conclusions(text: str | None) -> str | None:
    if not text:
        return None
    known = {c.value for c in JobConclusion}
    unknown = sorted(set(text.split(",")) - known)
    if unknown:
        raise ApiError(
            422, f"conclusion: unknown {', '.join(unknown)}; use one of: {', '.join(sorted(known))}"
        )
    return text


def _since(text: str) -> datetime:
    try:
        found: datetime = _SINCE.validate_python(text)
    except ValidationError as error:
        raise ApiError(422, f"since: {error.errors()[0]['msg']}") from error
    return found


def _view(row: Row[Any]) -> JobView:
    duration = None if row.started_ms is None else (row.finished_ms - row.started_ms) / 1000
    return JobView(
        job_id=row.job_id,
        run_id=row.run_id,
        attempt=row.attempt,
        name=row.name,
        conclusion=JobConclusion(row.conclusion),
        started=iso(row.started_ms),
        finished=iso(row.finished_ms) or "",
        duration_s=duration,
        failed_step=row.failed_step,
        failure_reason=row.failure_reason,
        tests=row.tests,
        commit=row.commit,
        runner=row.runner_id,
        pool=row.pool,
        machine=row.machine,
        provider=row.provider,
    )
