"""The FastAPI application: wiring of store, ingest, analysis and routers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Response
from sqlalchemy.engine import Engine

from common.api import Health
from controller.analysis.config import AnalysisConfig
from controller.analysis.service import AnalysisService
from controller.api import (
    analysis,
    description,
    errors,
    health,
    jobs,
    nodes,
    remediation,
    reports,
    results,
    runners,
    webhooks,
)
from controller.api.body import body_size
from controller.api.gate import Gate
from controller.api.limits import ClientLimits
from controller.api.precision import PublishedJSONResponse
from controller.ingest.polling import Polling
from controller.ingest.service import Ingest
from controller.leadership import Leadership
from controller.metrics import Metrics
from controller.placement import build_placements
from controller.providers import build_providers
from controller.providers.base import Poller, WebhookReceiver
from controller.providers.metered import metered
from controller.remediation import store as remediation_store
from controller.remediation.loop import Remediator
from controller.retention import Retention
from controller.settings import ControllerSettings
from controller.web import pages

INGEST_ROUTES = {"/v1/results": "results", "/v1/results/junit": "junit", "/v1/reports": "reports"}


def create_app(engine: Engine, settings: ControllerSettings) -> FastAPI:
    metrics = Metrics()

    leadership = Leadership(engine, settings.leader_lease_ttl_s, metrics)
    analysis_service = AnalysisService(
        engine,
        metrics,
        AnalysisConfig(window_days=settings.analysis_window_days),
        leadership,
        full_interval_s=settings.full_analysis_interval_s,
    )
    providers = build_providers(settings.providers, engine)
    remediator = Remediator(
        engine,
        settings,
        incidents=lambda: analysis_service.served().incidents,
        providers=metered(providers, metrics),
        health=lambda runner_id: analysis_service.served().health.get(runner_id, {}),
        flaky=lambda: {t["test_id"] for t in analysis_service.served().tests if t["verdict"] == "flaky"},
        leadership=leadership,
        metrics=metrics,
        placements=build_placements(settings.placements),
    )
    retention = Retention(engine, settings, leadership, analysis_service, metrics)
    ingest = Ingest(engine, metrics, on_new_data=analysis_service.mark_dirty)
    polling = Polling(
        ingest,
        {n: p for n, p in providers.items() if isinstance(p, Poller)},
        settle=remediator.pushed,
        leads=leadership.is_leader,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        leadership.start()
        analysis_service.start(settings.analysis_interval_s)
        remediator.start(settings.remediation_interval_s)
        retention.start()
        polling.start(settings.poll_interval_s)
        yield
        polling.stop()
        retention.stop()
        remediator.stop()
        analysis_service.stop()
        leadership.stop()
        engine.dispose()

    app = FastAPI(
        title="runner-controller",
        version="0.1.0",
        description=(
            "Tells a sick CI runner from a flaky test, proves it, drains it and corrects flake scores."
        ),
        lifespan=lifespan,
        default_response_class=PublishedJSONResponse,
    )
    app.state.engine = engine
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.analysis = analysis_service
    app.state.leadership = leadership
    app.state.ingest = ingest
    app.state.polling = polling
    app.state.health_of = lambda runner_id: Health(**analysis_service.served().health.get(runner_id, {}))
    app.state.remediator = remediator
    app.state.webhook_receivers = {
        name: provider for name, provider in providers.items() if isinstance(provider, WebhookReceiver)
    }

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
    limits = ClientLimits(
        settings.max_in_flight_per_client, settings.client_rate_per_s, settings.client_burst
    )
    app.add_middleware(Gate, max_body_bytes=settings.max_body_bytes, limits=limits, metrics=metrics)
    for module in (analysis, health, jobs, nodes, remediation, reports, results, runners, webhooks):
        app.include_router(module.router)
    pages.install(app)

    @app.middleware("http")
    async def count_requests(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        started = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        path = getattr(route, "path", "unmatched")
        elapsed = time.perf_counter() - started
        metrics.requests.labels(path, str(response.status_code)).inc()
        metrics.latency.labels(path).observe(elapsed)
        kind = INGEST_ROUTES.get(path) if request.method == "POST" else None
        if kind is not None:
            metrics.observe_ingest(kind, response.status_code, body_size(request), elapsed)
        return response

    return app
