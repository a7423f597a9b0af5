"""POST /v1/jobs (JSON array or NDJSON): finished CI jobs, the evidence no test result carries."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool

from common.api import ResultsAccepted
from common.jobs import JobRecord
from controller.api.auth import INGEST_ROLES, require
from controller.api.body import body_schema, read_bounded
from controller.api.results import parse_records
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
