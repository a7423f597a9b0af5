"""Provider pushes.

`POST /v1/webhooks/{provider}`: deliveries signed the provider's way (GitHub's HMAC, GitLab's token,
Buildkite's timestamped HMAC), checked by the provider's `WebhookReceiver` before anything is parsed:
bad or missing signature → 401 and nothing stored; a redelivery → 200 and nothing stored twice; an
event we do not use → 202. Finished jobs become results and job records (in one transaction), and
settle the reruns they are.

Buildbot's HttpStatusPush has no signature: its route takes the bearer token sent as a header
(`HttpStatusPush(headers={"Authorization": "Bearer <ingest token>"})`).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from common.jobs import JobRecord
from common.results import TestResult
from controller.api.auth import INGEST_ROLES, require
from controller.api.body import read_bounded, refuse_nul
from controller.api.errors import ApiError, describe_loc
from controller.ingest import jobs
from controller.ingest.service import Ingest
from controller.metrics import Metrics
from controller.providers.base import JobEvent, PayloadInvalid, WebhookReceiver, WebhookRejected
from controller.providers.buildbot import BuildbotProvider
from controller.remediation.loop import Remediator
from controller.tokens import Principal

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])
log = logging.getLogger(__name__)
# Webhook bodies are single events; a provider's largest (a GitHub workflow_job) is a few kB.
MAX_WEBHOOK_BYTES = 1024 * 1024


@router.post("/buildbot")
async def buildbot(
    request: Request,
    _p: Annotated[Principal, Depends(require(*INGEST_ROLES))],
    build: Annotated[dict[str, Any], Body()],
) -> dict[str, Any]:
    """A build started or finished. A finished build that names its worker is stored as a job record
    (test results arrive as JUnit); a finished rebuild the controller asked for settles its rerun at
    once instead of at the next poll."""
    if "buildid" not in build:
        raise ApiError(
            422, "body: not a Buildbot build (no buildid); configure HttpStatusPush with the build formatter"
        )
    metrics: Metrics = request.app.state.metrics
    metrics.webhook_deliveries.labels("buildbot", "new").inc()
    try:
        pushed = BuildbotProvider.pushed_job(build)
        records = jobs.records_of("buildbot", [pushed] if pushed else [])
    except PayloadInvalid as error:
        raise ApiError(422, f"buildbot push: {error}") from error
    except ValidationError as error:  # a worker name over the bounds of common.identity
        first = error.errors()[0]
        raise ApiError(422, f"buildbot push: runner: {describe_loc(first['loc'])}: {first['msg']}") from error
    refuse_nul(json.dumps(build).encode(), records, "job record")
    if records:
        # Deduplicated by the job's identity: Buildbot pushes carry no delivery id.
        ingest: Ingest = request.app.state.ingest
        await run_in_threadpool(ingest.jobs, records)
    found = BuildbotProvider.pushed_outcome(build)
    if found is None:
        return {"rerun": None, "outcome": None}
    job, outcome = found
    remediator: Remediator = request.app.state.remediator
    key = await run_in_threadpool(remediator.pushed, job.id, outcome)
    return {"rerun": key, "outcome": outcome if key else None}


@router.post(
    "/{provider}",
    responses={
        200: {"description": "taken in (or a redelivery: nothing stored twice)"},
        202: {"description": "an event type the controller does not use: ignored"},
        401: {"description": "missing, bad or stale signature: nothing stored"},
        404: {"description": "no such provider configured"},
        422: {"description": "authentic, but not a body this provider sends"},
    },
)
async def provider_webhook(provider: str, request: Request) -> JSONResponse:
    """A provider's signed delivery. Authenticated by its signature, not a bearer token."""
    receivers: dict[str, WebhookReceiver] = request.app.state.webhook_receivers
    receiver = receivers.get(provider)
    if receiver is None:
        known = ", ".join(sorted(receivers)) or "none"
        raise ApiError(
            404,
            f"no webhook receiver for provider {provider!r} (configured: {known}); "
            "set it in RUNNER_CONTROLLER_PROVIDERS with its webhook secret",
        )
    metrics: Metrics = request.app.state.metrics
    body = await read_bounded(request, MAX_WEBHOOK_BYTES)
    headers = {key.lower(): value for key, value in request.headers.items()}
    try:
        receiver.verify(headers, body, time.time())
    except WebhookRejected as error:
        metrics.webhook_deliveries.labels(provider, "rejected").inc()
        log.warning("rejected a %s webhook delivery: %s", provider, error)
        raise ApiError(401, f"{provider} webhook: {error}") from error
    parsed = _parse(receiver, provider, headers, body)
    if parsed is None:
        metrics.webhook_deliveries.labels(provider, "ignored").inc()
        return JSONResponse({"ignored": True}, status_code=202)
    events, records, job_records = parsed
    delivery = receiver.delivery_id(headers, body)
    ingest: Ingest = request.app.state.ingest
    event_name = ",".join(sorted({e.state for e in events}))
    stored = await run_in_threadpool(ingest.delivery, provider, delivery, event_name, records, job_records)
    if stored is None:
        return JSONResponse({"delivery": delivery, "duplicate": True})
    remediator: Remediator = request.app.state.remediator
    settled: list[str] = []
    for event in events:
        if event.state not in ("passed", "failed"):
            continue
        for job_id in (event.job.id, *event.rerun_ids):
            key = await run_in_threadpool(remediator.pushed, job_id, event.state)
            if key:
                settled.append(key)
    return JSONResponse(
        {"delivery": delivery, "duplicate": False, "results": stored.new, "reruns_settled": settled}
    )


def _parse(
    receiver: WebhookReceiver, provider: str, headers: dict[str, str], body: bytes
) -> tuple[list[JobEvent], list[TestResult], list[JobRecord]] | None:
    """A verified delivery's job events and the results they store, held to the bounds of the public
    models (common/): whatever an authentic body holds that they refuse is a 422 naming it, here for
    every provider, rather than a 500 from wherever it first breaks."""
    try:
        events = receiver.job_events(headers, body)
        if events is None:
            return None
        records = jobs.results_of(provider, events)
        job_records = jobs.records_of(provider, events)
    except PayloadInvalid as error:
        raise ApiError(422, f"{provider} webhook: {error}") from error
    except ValidationError as error:
        # A runner's name or id over the bounds of common.identity, met while the provider built it.
        first = error.errors()[0]
        what = _MODEL_NAMES.get(error.title, error.title)
        raise ApiError(
            422, f"{provider} webhook: {what}: {describe_loc(first['loc'])}: {first['msg']}"
        ) from error
    except RecursionError as error:
        raise ApiError(422, f"{provider} webhook: the body nests too deeply to be a delivery") from error
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        # A field of an unexpected type the provider's parser did not anticipate (Buildkite's
        # retries_count "x"): the body is authentic but not one the provider sends.
        log.warning("%s webhook: unexpected body: %s: %s", provider, type(error).__name__, error)
        raise ApiError(
            422, f"{provider} webhook: not a body {provider} sends: {type(error).__name__}: {error}"
        ) from error
    refuse_nul(body, records, "job result")
    refuse_nul(body, job_records, "job record")
    return events, records, job_records


_MODEL_NAMES = {"RunnerIdentity": "runner", "TestResult": "job result"}
