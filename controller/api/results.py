"""POST /v1/results (JSON array or NDJSON) and POST /v1/results/junit (JUnit XML)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, TypeAdapter, ValidationError

from common.api import ResultsAccepted
from common.identity import RunnerIdentity
from common.results import TestResult
from controller.api.auth import INGEST_ROLES, require
from controller.api.body import body_schema, read_bounded, refuse_nul
from controller.api.errors import ApiError, invalid_input
from controller.ingest.junit import JUnitCase, JUnitError, parse_junit
from controller.tokens import Principal

router = APIRouter(prefix="/v1/results", tags=["results"])
_ARRAY = TypeAdapter(list[TestResult])

_RESULTS_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"type": "array", "items": body_schema(TestResult)}},
            "application/x-ndjson": {
                "schema": {
                    "type": "array",
                    "items": body_schema(TestResult),
                    "minItems": 1,
                    "description": "one result record per line",
                }
            },
        },
    }
}


Record = TypeVar("Record", bound=BaseModel)


def parse_records(model: type[Record], body: bytes, content_type: str, limit: int, what: str) -> list[Record]:
    """A JSON array or NDJSON of `model` records, bounded to `limit`; errors name the line or item."""
    stripped = body.lstrip()
    if not stripped:
        raise ApiError(422, f"empty body: send a JSON array of {what} records, or NDJSON")
    ndjson = "ndjson" in content_type or "jsonl" in content_type or not stripped.startswith(b"[")
    if ndjson:
        lines = [line for line in body.splitlines() if line.strip()]
        if len(lines) > limit:
            raise ApiError(413, f"{len(lines)} records exceed the limit of {limit} per request")
        records: list[Record] = []
        for number, line in enumerate(lines):
            try:
                records.append(model.model_validate_json(line))
            except ValidationError as error:
                raise invalid_input(error, ("body", number), what=f"line {number + 1}: ") from error
        refuse_nul(body, records)
        return records
    try:
        records = TypeAdapter(list[model]).validate_json(body)  # type: ignore[valid-type]
    except ValidationError as error:
        raise invalid_input(error) from error
    if len(records) > limit:
        raise ApiError(413, f"{len(records)} records exceed the limit of {limit} per request")
    refuse_nul(body, records)
    return records


@router.post("", response_model=ResultsAccepted, openapi_extra=_RESULTS_BODY)
async def post_results(
    request: Request, _principal: Annotated[Principal, Depends(require(*INGEST_ROLES))]
) -> ResultsAccepted:
    settings = request.app.state.settings
    body = await read_bounded(request, settings.max_body_bytes)
    content_type = request.headers.get("content-type", "")
    records = parse_records(TestResult, body, content_type, settings.max_results_per_request, "result")
    return await run_in_threadpool(request.app.state.ingest.results, records)


@router.post(
    "/junit",
    response_model=ResultsAccepted,
    openapi_extra={
        "requestBody": {"required": True, "content": {"application/xml": {"schema": {"type": "string"}}}}
    },
)
async def post_junit(
    request: Request,
    _principal: Annotated[Principal, Depends(require(*INGEST_ROLES))],
    runner_id: Annotated[str | None, Query(max_length=200)] = None,
    runner_name: Annotated[str | None, Query(max_length=200)] = None,
    machine: Annotated[str | None, Query(max_length=200)] = None,
    pool: Annotated[str | None, Query(max_length=200)] = None,
    image: Annotated[str | None, Query(max_length=200)] = None,
    shard: Annotated[str | None, Query(max_length=200)] = None,
    labels: Annotated[str | None, Query(max_length=4000, description="comma-separated")] = None,
    provider: Annotated[str | None, Query(max_length=200)] = None,
    ephemeral: bool | None = None,
    job_id: Annotated[str | None, Query(max_length=500)] = None,
    run_id: Annotated[str | None, Query(max_length=500)] = None,
    attempt: Annotated[int | None, Query(ge=0)] = None,
    commit: Annotated[str | None, Query(max_length=200)] = None,
    time_: Annotated[str | None, Query(alias="time", description="event time when the XML has none")] = None,
    x_runner_id: Annotated[str | None, Header()] = None,
    x_runner_pool: Annotated[str | None, Header()] = None,
    x_runner_machine: Annotated[str | None, Header()] = None,
    x_runner_image: Annotated[str | None, Header()] = None,
    x_job_id: Annotated[str | None, Header()] = None,
    x_run_id: Annotated[str | None, Header()] = None,
) -> ResultsAccepted:
    settings = request.app.state.settings
    identity: dict[str, Any] = {
        "id": runner_id or x_runner_id,
        "name": runner_name,
        "machine": machine or x_runner_machine,
        "pool": pool or x_runner_pool,
        "image": image or x_runner_image,
        "shard": shard,
        "labels": [label.strip() for label in labels.split(",") if label.strip()] if labels else [],
        "provider": provider,
        "ephemeral": bool(ephemeral),
    }
    if not identity["id"]:
        raise ApiError(422, "runner_id is required: pass ?runner_id=ID or the X-Runner-Id header")
    body = await read_bounded(request, settings.max_body_bytes)
    try:
        # The hardened parser is pure Python: keep a large upload off the event loop.
        cases = await run_in_threadpool(
            parse_junit, body, max_bytes=settings.max_body_bytes, max_cases=settings.max_results_per_request
        )
    except JUnitError as error:
        raise ApiError(400, f"JUnit XML rejected: {error}") from error
    try:
        runner = RunnerIdentity.model_validate({k: v for k, v in identity.items() if v is not None})
    except ValidationError as error:
        raise invalid_input(error, ("query",)) from error
    shared = {
        "time": time_ or datetime.fromtimestamp(time.time(), UTC).isoformat(),
        "job_id": job_id or x_job_id,
        "run_id": run_id or x_run_id,
        "attempt": attempt,
        "commit": commit,
        "runner": runner,
    }
    try:
        # Off the event loop too: validating 200,000 records takes seconds.
        records = await run_in_threadpool(_junit_records, cases, shared)
    except ValidationError as error:
        raise invalid_input(error, ("junit",)) from error
    return await run_in_threadpool(request.app.state.ingest.results, records)


def _junit_records(cases: list[JUnitCase], shared: dict[str, Any]) -> list[TestResult]:
    """The cases as result records. The runner is one validated instance that every record shares
    (pydantic keeps model instances as given): per-record copies made a large upload cost ~2.5 kB a
    case at its peak."""
    return _ARRAY.validate_python(
        [
            shared
            | {
                "test_id": case.test_id,
                "outcome": case.outcome,
                "duration_s": case.duration_s,
                "message": case.message,
                **({"time": case.time} if case.time else {}),
            }
            for case in cases
        ]
    )
