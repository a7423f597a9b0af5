"""The FastAPI application: wiring of store, ingest, analysis and routers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from sqlalchemy.engine import Engine

from common.api import Health
from controller.analysis.service import AnalysisService
from controller.api import (
    analysis,
    description,
    errors,
    health,
    remediation,
    reports,
    results,
    runners,
    webhooks,
)
from controller.api.gate import Gate
from controller.ingest.service import Ingest
from controller.metrics import Metrics
from controller.providers import build_providers
from controller.remediation import store as remediation_store
from controller.remediation.loop import Remediator
from controller.settings import ControllerSettings


def create_app(engine: Engine, settings: ControllerSettings) -> FastAPI:
    metrics = Metrics()

    analysis_service = AnalysisService(engine, metrics)
    remediator = Remediator(
        engine,
        settings,
        incidents=lambda: analysis_service.latest.incidents,
        providers=build_providers(settings.providers),
        health=lambda runner_id: analysis_service.latest.health.get(runner_id, {}),
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        analysis_service.start(settings.analysis_interval_s)
        remediator.start(settings.remediation_interval_s)
        yield
        remediator.stop()
        analysis_service.stop()
        engine.dispose()

    app = FastAPI(
        title="runner-controller",
        version="0.1.0",
        description=(
            "Tells a sick CI runner from a flaky test, proves it, drains it and corrects flake scores."
        ),
        lifespan=lifespan,
    )
    app.state.engine = engine
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.analysis = analysis_service
    app.state.ingest = Ingest(engine, metrics, on_new_data=analysis_service.mark_dirty)
    app.state.health_of = lambda runner_id: Health(**analysis_service.latest.health.get(runner_id, {}))
    app.state.remediator = remediator

    def cordon_of(runner_id: str) -> dict[str, Any] | None:
        with engine.connect() as conn:
            return remediation_store.cordon_of(conn, runner_id)

    def cleared_by() -> dict[str, list[str]]:
        with engine.connect() as conn:
            return remediation_store.cleared_by(conn)

    app.state.cordon_of = cordon_of
    app.state.cleared_by = cleared_by
    app.state.remediation_of = lambda request, runner_id: remediation.remediation_of(request, runner_id)

    errors.install(app)
    description.install(app)
    app.add_middleware(Gate, max_body_bytes=settings.max_body_bytes)
    for module in (analysis, health, remediation, reports, results, runners, webhooks):
        app.include_router(module.router)

    @app.middleware("http")
    async def count_requests(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        metrics.requests.labels(path, str(response.status_code)).inc()
        metrics.latency.labels(path).observe(time.perf_counter() - started)
        return response

    return app
