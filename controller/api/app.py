"""The FastAPI application: wiring of store, ingest, analysis and routers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from sqlalchemy.engine import Engine

from common.api import Health
from controller.analysis.service import AnalysisService
from controller.api import analysis, errors, health, reports, results, runners
from controller.ingest.service import Ingest
from controller.metrics import Metrics
from controller.settings import ControllerSettings


def create_app(engine: Engine, settings: ControllerSettings) -> FastAPI:
    metrics = Metrics()

    analysis_service = AnalysisService(engine, metrics)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        analysis_service.start(settings.analysis_interval_s)
        yield
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
    app.state.cordon_of = lambda _runner_id: None

    errors.install(app)
    for module in (analysis, health, reports, results, runners):
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
