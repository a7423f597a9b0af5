"""POST /v1/reports: batches of agent reports, deduplicated by (agent, boot, sequence)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from common.api import ReportsAccepted, RunnerDirective
from common.auth import Role
from common.reports import ReportBatch
from controller.api.auth import REPORT_ROLES, require
from controller.api.body import body_schema, read_bounded, refuse_nul
from controller.api.errors import ApiError, invalid_input
from controller.ingest.reports import KeyConflict
from controller.tokens import Principal

router = APIRouter(prefix="/v1/reports", tags=["reports"])


@router.post(
    "",
    response_model=ReportsAccepted,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": body_schema(ReportBatch)}},
        }
    },
)
async def post_reports(
    request: Request, principal: Annotated[Principal, Depends(require(*REPORT_ROLES))]
) -> ReportsAccepted:
    body = await read_bounded(request, request.app.state.settings.max_body_bytes)
    try:
        batch = ReportBatch.model_validate_json(body)
    except ValidationError as error:
        raise invalid_input(error) from error
    refuse_nul(body, batch.reports, "report")
    if principal.role is Role.agent:
        foreign = sorted({r.runner.id for r in batch.reports if r.runner.id != principal.runner_id})
        if foreign:
            raise ApiError(
                403,
                f"this agent token belongs to runner '{principal.runner_id}' and may not report for: "
                + ", ".join(foreign),
            )
    try:
        accepted: ReportsAccepted = await run_in_threadpool(request.app.state.ingest.reports, batch.reports)
    except KeyConflict as error:
        raise ApiError(409, str(error)) from error
    runners = sorted({r.runner.id for r in batch.reports})
    accepted.directives = await run_in_threadpool(_directives, request, runners)
    return accepted


def _directives(request: Request, runners: list[str]) -> list[RunnerDirective]:
    """The agent's answer says whether its runner is cordoned, for hosts the provider cannot stop."""
    found = []
    for runner in runners:
        cordon = request.app.state.cordon_of(runner)
        found.append(
            RunnerDirective(runner=runner, cordoned=cordon is not None, reason=(cordon or {}).get("reason"))
        )
    return found
