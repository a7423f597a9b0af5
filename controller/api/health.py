"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from controller.api.auth import READ_ROLES, require
from controller.api.errors import ApiError
from controller.db.schema import state
from controller.tokens import Principal

router = APIRouter(tags=["health"])


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/v1/health")
def replica_health(
    request: Request, _p: Annotated[Principal, Depends(require(*READ_ROLES))]
) -> dict[str, Any]:
    """This replica: whether it leads (runs analysis, remediation and retention), and the lease."""
    return {"status": "ok", "leadership": request.app.state.leadership.status()}


@router.get("/readyz")
def readyz(request: Request) -> dict[str, str]:
    try:
        current = state(request.app.state.engine)
    except Exception as error:  # any driver error means "not ready", and says why
        raise ApiError(503, f"database unreachable: {type(error).__name__}") from error
    if not current.up_to_date:
        raise ApiError(503, f"database schema at {current.current}, expected {current.head}")
    return {"status": "ready", "schema": current.head}


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.metrics.registry), media_type=CONTENT_TYPE_LATEST)
