"""Provider pushes. Buildbot's HttpStatusPush has no signature: it is authenticated by the bearer token
sent as a header (`HttpStatusPush(headers={"Authorization": "Bearer <ingest token>"})`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.concurrency import run_in_threadpool

from controller.api.auth import INGEST_ROLES, require
from controller.api.errors import ApiError
from controller.providers.buildbot import BuildbotProvider
from controller.remediation.loop import Remediator
from controller.tokens import Principal

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])


@router.post("/buildbot")
async def buildbot(
    request: Request,
    _p: Annotated[Principal, Depends(require(*INGEST_ROLES))],
    build: Annotated[dict[str, Any], Body()],
) -> dict[str, Any]:
    """A build started or finished. A finished rebuild the controller asked for settles its rerun at
    once instead of at the next poll; anything else is acknowledged and ignored (test results arrive
    as JUnit)."""
    if "buildid" not in build:
        raise ApiError(
            422, "body: not a Buildbot build (no buildid); configure HttpStatusPush with the build formatter"
        )
    found = BuildbotProvider.pushed_outcome(build)
    if found is None:
        return {"rerun": None, "outcome": None}
    job, outcome = found
    remediator: Remediator = request.app.state.remediator
    key = await run_in_threadpool(remediator.pushed, job.id, outcome)
    return {"rerun": key, "outcome": outcome if key else None}
