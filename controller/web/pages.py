"""The fleet page at `/`, its login form and its stylesheet: server-rendered, read-only, no script."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from sqlalchemy import select

from controller.api import runners as runners_api
from controller.api.job_stats import job_stats
from controller.db import tables
from controller.remediation import audit
from controller.web import session, trend
from controller.web.fleet import FleetPage, build_page
from controller.web.format import FILTERS
from controller.web.heatmap import HeatMap
from controller.web.job_trend import JobBins, job_bins

HERE = Path(__file__).parent
ACTIONS_SHOWN = 100
# No script, no inline style, nothing from elsewhere: even a test id that slipped past escaping could
# not run. The page is data as of now, so no cache may keep it. Referrers go to this site only: with
# none at all, browsers send `Origin: null` on the login post and the same-origin check could not work.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

templates = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.filters.update(FILTERS)
templates.globals.update(trend_height=trend.HEIGHT, trend_floor=trend.y_of(0.0), trend_ceiling=trend.CEILING)
router = APIRouter(include_in_schema=False)


def install(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = templates.get_template(name).render(**context)
    return HTMLResponse(html, status_code=status, headers=HEADERS)


@router.get("/", response_class=HTMLResponse)
async def fleet(request: Request) -> Response:
    principal = await run_in_threadpool(session.reader, request)
    if principal is None:
        response: Response = RedirectResponse("/login", status_code=303)
        if request.cookies.get(session.COOKIE):
            session.forget(response)
        return response
    page = await run_in_threadpool(gather, request)
    return render("fleet.html", page=page, who=principal)


@router.get("/login", response_class=HTMLResponse)
def login_form() -> HTMLResponse:
    return render("login.html", message=None)


@router.post("/login")
async def login(request: Request) -> Response:
    try:
        _principal, token = await session.login(request)
    except session.LoginRefused as refused:
        return render("login.html", status=refused.status, message=refused.message)
    response = RedirectResponse("/", status_code=303)
    session.keep(response, request, token)
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    if not session.same_origin(request):
        return render("login.html", status=403, message="logout refused: posted from another site")
    response = RedirectResponse("/login", status_code=303)
    session.forget(response)
    return response


def gather(request: Request) -> FleetPage:
    """Read what the API's read endpoints read, in one go."""
    state = request.app.state
    # The heat map needs the analysed rows: a follower computes them read-only rather than serve none.
    latest = state.analysis.with_frame(fresh=state.settings.fresh_reads)
    with state.engine.connect() as conn:
        since_ms = runners_api.jobs_since_ms(request, conn, latest.as_of_ms)
        rows = conn.execute(select(tables.runners).order_by(tables.runners.c.id)).all()
        counts = runners_api.execution_counts(conn)
        stats = job_stats(conn, since_ms)
        holds = state.remediator.holds()
        views = [
            runners_api.view(request, conn, row, counts.get(row.id, (0, 0)), False, stats.get(row.id), holds)
            for row in rows
        ]
        actions = audit.listing(conn, limit=ACTIONS_SHOWN)
    remediator = state.remediator

    def policy_of(pool: str | None) -> tuple[str, dict[str, Any]]:
        return remediator.policy(pool).mode, remediator.budget(pool).as_dict()

    def jobs_in(heat: HeatMap) -> JobBins:
        # Binned once the heat map's bins are known, so a row's two trends line up.
        with state.engine.connect() as conn:
            return job_bins(conn, heat, since_ms, latest.as_of_ms or int(time.time() * 1000))

    return build_page(latest, views, actions, state.cleared_by(), state.analysis.status(), policy_of, jobs_in)
