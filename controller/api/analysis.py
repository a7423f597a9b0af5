"""Verdicts over HTTP: incidents, outages, test scores, and the explanations behind them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import PlainTextResponse

from common.timeutil import iso
from controller import retention
from controller.analysis.engine import Analysis
from controller.analysis.explain import explain_runner, explain_test
from controller.analysis.service import AnalysisService
from controller.api.auth import INGEST_ROLES, READ_ROLES, require
from controller.api.errors import ApiError
from controller.selectors import RecordFields, record_selector_pattern, select_records
from controller.tokens import Principal

router = APIRouter(prefix="/v1", tags=["analysis"])
Reader = Annotated[Principal, Depends(require(*READ_ROLES))]
VERDICTS = ("flaky", "broken", "platform", "resource-sensitive", "healthy")
_ONE_VERDICT = "|".join(VERDICTS)
INCIDENT_FIELDS: RecordFields = {
    "id": lambda i: i["id"],
    "kind": lambda i: i["kind"],
    "entity": lambda i: i["entity"],
    "state": lambda i: i["state"],
    "dimension": lambda i: i["dimension"],
    "pool": lambda i: i.get("pool"),
}
TEST_FIELDS: RecordFields = {
    "test": lambda t: t["test_id"],
    "verdict": lambda t: t["verdict"],
    "discounted-by": lambda t: sorted(t.get("discounted_by") or []),
}


def _selector_query(fields: RecordFields) -> Any:
    return Query(
        alias="l",
        description=f"selector over {', '.join(sorted(fields))}, e.g. state=sick,kind!=pool",
        json_schema_extra={"pattern": record_selector_pattern(fields)},
    )


IncidentSelector = Annotated[str | None, _selector_query(INCIDENT_FIELDS)]
TestSelector = Annotated[str | None, _selector_query(TEST_FIELDS)]


def selected(text: str | None, items: list[dict[str, Any]], fields: RecordFields) -> list[dict[str, Any]]:
    try:
        return select_records(text, items, fields)
    except ValueError as error:
        raise ApiError(422, f"selector: {error}") from error


def service(request: Request) -> AnalysisService:
    found: AnalysisService = request.app.state.analysis
    return found


def current(request: Request) -> Analysis:
    """The analysis covering everything stored so far: a read right after a write sees its verdicts."""
    svc = service(request)
    if request.app.state.settings.fresh_reads:
        return svc.refresh()
    return svc.served()


@router.get("/incidents")
def list_incidents(
    request: Request,
    _p: Reader,
    state: Annotated[str | None, Query(description="suspect, sick or resolved; comma-separated")] = None,
    kind: Annotated[str | None, Query(description="runner, machine, image or pool")] = None,
    entity: str | None = None,
    selector: IncidentSelector = None,
) -> dict[str, Any]:
    states = set(state.split(",")) if state else None
    items = [
        i
        for i in current(request).incidents
        if (states is None or i["state"] in states)
        and (kind is None or i["kind"] == kind)
        and (entity is None or i["entity"] == entity)
    ]
    return {"items": selected(selector, items, INCIDENT_FIELDS), "as_of": iso(current(request).as_of_ms)}


@router.get("/incidents/{incident_id}")
def get_incident(request: Request, incident_id: str, _p: Reader) -> dict[str, Any]:
    for incident in current(request).incidents:
        if incident["id"] == incident_id:
            return incident
    raise ApiError(404, f"incident '{incident_id}' not found")


@router.get("/outages")
def list_outages(request: Request, _p: Reader) -> dict[str, Any]:
    return {"items": current(request).outages}


@router.get("/tests")
def list_tests(
    request: Request,
    _p: Reader,
    verdict: Annotated[
        str | None,
        Query(
            description="flaky, broken, platform, resource-sensitive, healthy; comma-separated",
            json_schema_extra={"pattern": f"^(({_ONE_VERDICT})(,({_ONE_VERDICT}))*)?$"},
        ),
    ] = None,
    q: Annotated[str | None, Query(description="substring of the test id")] = None,
    all_tests: Annotated[
        bool, Query(alias="all", description="include healthy tests that never failed")
    ] = False,
    limit: Annotated[int, Query(ge=1, le=100_000)] = 1000,
    selector: TestSelector = None,
) -> dict[str, Any]:
    verdicts = set(verdict.split(",")) if verdict else None
    if verdicts and not verdicts <= set(VERDICTS):
        raise ApiError(
            422, f"verdict: unknown {sorted(verdicts - set(VERDICTS))}; allowed: {', '.join(VERDICTS)}"
        )
    items = [
        t
        for t in current(request).tests
        if (verdicts is None or t["verdict"] in verdicts)
        and (q is None or q in t["test_id"])
        and (all_tests or verdicts is not None or t["failures"] > 0)
    ]
    items = selected(selector, items, TEST_FIELDS)
    shown = _with_clearances(request, items[:limit])
    return {"items": shown, "total": len(items), "as_of": iso(current(request).as_of_ms)}


def _with_clearances(request: Request, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Remediation's flake clearances: incidents whose jobs reran green elsewhere, per test."""
    cleared = request.app.state.cleared_by()
    return [t | {"cleared_by": cleared.get(t["test_id"], [])} for t in items]


@router.get("/quarantine", response_class=PlainTextResponse)
def quarantine(request: Request, _p: Reader) -> str:
    """Known flaky tests, one id per line: for CI to skip or retry."""
    ids = sorted(t["test_id"] for t in current(request).tests if t["verdict"] == "flaky")
    return "".join(f"{test_id}\n" for test_id in ids)


@router.get("/tests/explain")
def get_test_explanation(
    request: Request, _p: Reader, test_id: Annotated[str, Query(min_length=1)]
) -> dict[str, Any]:
    latest = service(request).with_frame(request.app.state.settings.fresh_reads)
    found = explain_test(latest.frame, latest, test_id)
    if found is None:
        raise ApiError(404, f"test '{test_id}' not found")
    found["cleared_by"] = request.app.state.cleared_by().get(test_id, [])
    with request.app.state.engine.connect() as conn:
        found["archived"] = [
            {"day": iso(day.pop("day_ms"))} | day for day in retention.archived(conn, test_id)
        ]
    return found


@router.get("/runners/{runner_id}/explain")
def get_runner_explanation(request: Request, runner_id: str, _p: Reader) -> dict[str, Any]:
    svc = service(request)
    latest = svc.with_frame(request.app.state.settings.fresh_reads)
    found = explain_runner(latest.frame, latest, runner_id, svc.config)
    if found is None:
        raise ApiError(404, f"runner '{runner_id}' not found")
    found["cordon"] = request.app.state.cordon_of(runner_id)
    found["remediation"] = request.app.state.remediation_of(request, runner_id)
    return found


@router.get("/analysis")
def analysis_status(request: Request, _p: Reader) -> dict[str, Any]:
    status = service(request).status()
    status["as_of"] = iso(status["as_of"]) if status["as_of"] else None
    status["role"] = request.app.state.leadership.status()["role"]
    return status


@router.post("/analysis/run")
async def run_analysis(
    request: Request, _p: Annotated[Principal, Depends(require(*INGEST_ROLES, *READ_ROLES))]
) -> dict[str, Any]:
    """Analyse everything stored so far and answer when done (what `runnerctl import` waits on)."""
    try:
        await run_in_threadpool(service(request).refresh, True)
    except Exception as error:
        # Logged with its traceback by the service; the caller learns the verdicts did not catch up.
        raise ApiError(
            500, f"the analysis failed ({type(error).__name__}: {error}); reads serve the last verdicts"
        ) from error
    return analysis_status(request, _p)
