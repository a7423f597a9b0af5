"""The fleet page's view model: what the API already serves (runners, incidents, outages, tests, the audit
log), arranged for one screen. No verdict is made here; a host row of an ephemeral pool takes its health
from the open machine incident on that host, as the analysis does for its persistent runners."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from common.api import RunnerView
from common.timeutil import iso
from controller.analysis.engine import HEALTH_ORDER, Analysis
from controller.web import heatmap
from controller.web.format import parse_ms
from controller.web.heatmap import HeatMap, HeatRow
from controller.web.job_trend import JobBins
from controller.web.trend import Trend, trend_of

OPEN_STATES = ("sick", "suspect")
BROAD_KINDS = ("pool", "image")
TEST_VERDICTS = ("broken", "flaky", "platform", "resource-sensitive")
TESTS_SHOWN = 50
RESOLVED_SHOWN = 20


@dataclass(frozen=True)
class RunnerRow:
    key: str  # runner id, or the host of an ephemeral pool's single-use runners
    host: bool
    runner_ids: int
    machine: str | None
    image: str | None
    health: str  # healthy | warning | suspect | sick
    dimension: str | None  # disk | memory | clock | cache | unknown, when not healthy
    incident_id: str | None
    warnings: list[str]
    cordon: dict[str, Any] | None
    executions: int
    failures: int
    last_seen: str | None
    heat: HeatRow | None
    # Open pool or image incidents this runner's failures belong to: its own health stays that of the
    # runner (as the API says), but the operator should see it is not clean.
    via: list[dict[str, Any]] = field(default_factory=list)
    trend: Trend | None = None  # its heat-map row as a failure-rate line
    # Its CI jobs over the analysis window (RunnerView's job fields), and their failure rate per bin.
    jobs: int = 0
    job_failures: int = 0
    median_job_s: float | None = None
    job_trend: Trend | None = None

    @property
    def failure_rate(self) -> float:
        return self.failures / self.executions if self.executions else 0.0

    @property
    def job_failure_rate(self) -> float | None:
        return self.job_failures / self.jobs if self.jobs else None


@dataclass(frozen=True)
class PoolView:
    name: str
    rows: list[RunnerRow]
    mode: str
    budget: dict[str, Any]
    incidents: list[dict[str, Any]]  # open pool or image incidents in this pool

    @property
    def health_counts(self) -> dict[str, int]:
        counts = Counter(r.health for r in self.rows)
        return {h: counts[h] for h in HEALTH_ORDER if counts[h]}

    @property
    def cordoned(self) -> int:
        return sum(1 for r in self.rows if r.cordon)


@dataclass(frozen=True)
class FleetPage:
    as_of: str | None
    status: dict[str, Any]
    pools: list[PoolView]
    heat: HeatMap
    open_incidents: list[dict[str, Any]]
    resolved_incidents: list[dict[str, Any]]
    outages: list[dict[str, Any]]
    tests: dict[str, list[dict[str, Any]]]
    test_totals: dict[str, int]
    actions: list[dict[str, Any]]
    incident_entities: dict[str, str] = field(default_factory=dict)  # incident id -> "kind/entity"

    @property
    def health_counts(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for pool in self.pools:
            counts.update(pool.health_counts)
        return {h: counts[h] for h in HEALTH_ORDER}

    @property
    def cordoned(self) -> int:
        return sum(p.cordoned for p in self.pools)

    @property
    def runner_count(self) -> int:
        return sum(len(p.rows) for p in self.pools)


def build_page(
    analysis: Analysis,
    runners: list[RunnerView],
    actions: list[dict[str, Any]],
    cleared_by: dict[str, list[str]],
    status: dict[str, Any],
    policy_of: Callable[[str | None], tuple[str, dict[str, Any]]],
    job_bins: Callable[[HeatMap], JobBins] | None = None,
) -> FleetPage:
    """`policy_of(pool)` gives the pool's remediation mode and disruption budget, for its header;
    `job_bins(heat)` each row's jobs in the heat map's bins, for its job trend."""
    open_incidents = [i for i in analysis.incidents if i["state"] in OPEN_STATES]
    open_incidents.sort(key=lambda i: (-HEALTH_ORDER[i["state"]], i["onset"]))
    resolved = [i for i in analysis.incidents if i["state"] == "resolved"]
    resolved.sort(key=lambda i: i["onset"], reverse=True)

    heat = heatmap.build(
        analysis.frame,
        analysis.as_of_ms,
        [(parse_ms(o["start"], 0), parse_ms(o["end"], 0)) for o in analysis.outages],
        _incident_stretches(open_incidents, analysis.as_of_ms),
    )
    heat_rows = {row.key: row for row in heat.rows}
    rows = _runner_rows(runners, open_incidents, heat_rows)
    broad = [(i, _members(i)) for i in open_incidents if i["kind"] in BROAD_KINDS]
    starts = [c.start_ms for c in heat.columns]
    by_pool: dict[str, list[RunnerRow]] = {}
    jobs = job_bins(heat) if job_bins else JobBins([], 0, {})
    for pool, row in rows:
        via = [i for i, members in broad if row.key in members]
        trend = trend_of(row.heat, starts) if row.heat else None
        job_row = jobs.rows.get(row.key)
        job_trend = trend_of(job_row, jobs.starts_ms, what="job failure rate") if job_row else None
        by_pool.setdefault(pool, []).append(replace(row, via=via, trend=trend, job_trend=job_trend))
    pools = []
    for name in sorted(by_pool):
        mode, budget = policy_of(None if name == "<none>" else name)
        incidents = [i for i, _ in broad if name in i["pool"]]
        pools.append(PoolView(name=name, rows=by_pool[name], mode=mode, budget=budget, incidents=incidents))

    tests: dict[str, list[dict[str, Any]]] = {v: [] for v in TEST_VERDICTS}
    totals = dict.fromkeys(TEST_VERDICTS, 0)
    for test in analysis.tests:
        verdict = test["verdict"]
        if verdict in tests:
            totals[verdict] += 1
            if len(tests[verdict]) < TESTS_SHOWN:
                tests[verdict].append(test | {"cleared_by": cleared_by.get(test["test_id"], [])})

    return FleetPage(
        as_of=iso(analysis.as_of_ms) if analysis.as_of_ms else None,
        status=status,
        pools=pools,
        heat=heat,
        open_incidents=open_incidents,
        resolved_incidents=resolved[:RESOLVED_SHOWN],
        outages=analysis.outages,
        tests=tests,
        test_totals=totals,
        actions=actions,
        incident_entities={i["id"]: f"{i['kind']}/{i['entity']}" for i in analysis.incidents},
    )


def _members(incident: dict[str, Any]) -> set[str]:
    """The heat-map rows an incident covers: persistent runners by id, ephemeral ones by host."""
    if incident["kind"] == "runner":
        return {incident["entity"]}
    return {incident["entity"], *incident["persistent_runners"], *incident["machines"]}


def _incident_stretches(incidents: list[dict[str, Any]], as_of_ms: int) -> list[tuple[str, int, int]]:
    """(heat-map row, start, end) for each open incident: from its onset to now."""
    out: list[tuple[str, int, int]] = []
    for incident in incidents:
        start = parse_ms(incident["onset"], as_of_ms)
        out.extend((key, start, as_of_ms + 1) for key in sorted(_members(incident)))
    return out


def _runner_rows(
    runners: list[RunnerView], open_incidents: list[dict[str, Any]], heat_rows: dict[str, HeatRow]
) -> list[tuple[str, RunnerRow]]:
    out: list[tuple[str, RunnerRow]] = []
    hosts: dict[tuple[str, str], list[RunnerView]] = {}
    for view in runners:
        identity = view.identity
        pool = identity.pool or "<none>"
        if identity.ephemeral:
            hosts.setdefault((pool, identity.machine or identity.id), []).append(view)
            continue
        out.append(
            (
                pool,
                RunnerRow(
                    key=identity.id,
                    host=False,
                    runner_ids=1,
                    machine=identity.machine,
                    image=identity.image,
                    health=view.health.health,
                    dimension=view.health.dimension if view.health.health != "healthy" else None,
                    incident_id=view.health.incident_id,
                    warnings=view.health.warnings,
                    cordon=view.cordon,
                    executions=view.executions,
                    failures=view.failures,
                    last_seen=view.last_seen,
                    heat=heat_rows.get(identity.id),
                    jobs=view.jobs,
                    job_failures=view.job_failures,
                    median_job_s=view.median_job_duration_s,
                ),
            )
        )
    on_host = {i["entity"]: i for i in open_incidents if i["kind"] == "machine"}
    for (pool, host), views in hosts.items():
        incident = on_host.get(host)
        images = sorted({v.identity.image for v in views if v.identity.image})
        out.append(
            (
                pool,
                RunnerRow(
                    key=host,
                    host=True,
                    runner_ids=len(views),
                    machine=host,
                    image=", ".join(images) or None,
                    health=incident["state"] if incident else "healthy",
                    dimension=incident["dimension"] if incident else None,
                    incident_id=incident["id"] if incident else None,
                    warnings=[],
                    cordon=None,
                    executions=sum(v.executions for v in views),
                    failures=sum(v.failures for v in views),
                    last_seen=max((v.last_seen for v in views if v.last_seen), default=None),
                    heat=heat_rows.get(host),
                    # Medians of single-use runners do not add up to the host's: left out.
                    jobs=sum(v.jobs for v in views),
                    job_failures=sum(v.job_failures for v in views),
                ),
            )
        )
    out.sort(key=lambda item: (item[0], item[1].key))
    return out
