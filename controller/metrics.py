"""Prometheus metrics, one registry per app so several apps (tests, replicas in one process) never clash.

Labels stay bounded: pools, kinds, states, providers and outcomes, never runner ids or jobs (an
ephemeral fleet mints a runner id per job). Per-runner detail lives in the API, not here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

INGEST_KINDS = ("results", "junit", "reports")
# Agents report every few minutes; a depth older than this belongs to a runner that is gone.
SPOOL_DEPTH_FRESH_S = 900.0


class SpoolDepths(Collector):
    """The spool depth each agent last reported, summed per pool over the agents heard from lately."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, tuple[str, int, float]] = {}  # runner -> (pool, depth, monotonic)

    def report(self, runner: str, pool: str, depth: int) -> None:
        with self._lock:
            self._latest[runner] = (pool, depth, time.monotonic())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        cutoff = time.monotonic() - SPOOL_DEPTH_FRESH_S
        sums: dict[str, int] = {}
        agents: dict[str, int] = {}
        with self._lock:
            for runner, (pool, depth, at) in list(self._latest.items()):
                if at < cutoff:
                    del self._latest[runner]
                    continue
                sums[pool] = sums.get(pool, 0) + depth
                agents[pool] = agents.get(pool, 0) + 1
        depth_family = GaugeMetricFamily(
            "runnerctl_agent_spool_depth_reports",
            "Reports waiting in agents' spools, as they last said, summed per pool",
            labels=["pool"],
        )
        reporting = GaugeMetricFamily(
            "runnerctl_agent_reporting", "Agents heard from in the last 15 minutes, per pool", labels=["pool"]
        )
        for pool in sorted(sums):
            depth_family.add_metric([pool], sums[pool])
            reporting.add_metric([pool], agents[pool])
        yield depth_family
        yield reporting


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.results_ingested = Counter(
            "runnerctl_ingest_results_total",
            "Test results received, by whether they were new",
            ["status"],
            registry=r,
        )
        self.jobs_ingested = Counter(
            "runnerctl_ingest_jobs_total",
            "CI job records received, by whether they were new",
            ["status"],
            registry=r,
        )
        self.reports_ingested = Counter(
            "runnerctl_ingest_reports_total",
            "Agent reports received, by whether they were new",
            ["status"],
            registry=r,
        )
        self.webhook_deliveries = Counter(
            "runnerctl_webhook_deliveries_total",
            "Provider webhook deliveries, by provider and status (new, replayed, rejected, ignored)",
            ["provider", "status"],
            registry=r,
        )
        # Buildbot's push route always exists: its series are there from the start.
        self.webhook_deliveries.labels("buildbot", "new")
        self.ingest_requests = Counter(
            "runnerctl_ingest_requests_total",
            "Ingest requests by kind (results, junit, reports) and outcome (accepted, rejected)",
            ["kind", "outcome"],
            registry=r,
        )
        self.ingest_rejected = Counter(
            "runnerctl_ingest_rejected_total",
            "Ingest requests refused, by kind and HTTP status (400 bad XML, 403 foreign runner, "
            "413 too large, 422 invalid record)",
            ["kind", "code"],
            registry=r,
        )
        self.ingest_bytes = Counter(
            "runnerctl_ingest_bytes_total",
            "Request body bytes of accepted ingest requests",
            ["kind"],
            registry=r,
        )
        self.ingest_latency = Histogram(
            "runnerctl_ingest_duration_seconds",
            "Time from request to answer of ingest requests, stored and committed",
            ["kind"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        for kind in INGEST_KINDS:  # present from the start, so rate() and alerts see a zero, not nothing
            for outcome in ("accepted", "rejected"):
                self.ingest_requests.labels(kind, outcome)
            self.ingest_bytes.labels(kind)
        self.agent_reports_dropped = Counter(
            "runnerctl_agent_spool_dropped_reports_total",
            "Reports agents say their spool had to drop, per pool",
            ["pool"],
            registry=r,
        )
        self.spool_depths = SpoolDepths()
        r.register(self.spool_depths)
        self.requests = Counter(
            "runnerctl_http_requests_total",
            "HTTP requests by route and status",
            ["route", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "runnerctl_http_request_duration_seconds", "HTTP request latency by route", ["route"], registry=r
        )
        self.in_progress = Gauge(
            "runnerctl_http_requests_in_progress",
            "Authenticated requests under /v1 admitted and not yet answered (controller/api/limits.py)",
            registry=r,
        )
        self.client_limited = Counter(
            "runnerctl_http_client_limited_total",
            "Requests answered 429 because their token was over a per-client limit (in_flight, rate)",
            ["limit"],
            registry=r,
        )
        for limit in ("in_flight", "rate"):
            self.client_limited.labels(limit)
        self.incidents = Gauge(
            "runnerctl_incidents",
            "Open incidents by kind, state and dimension",
            ["kind", "state", "dimension"],
            registry=r,
        )
        self.analysis_seconds = Histogram(
            "runnerctl_analysis_duration_seconds", "Time one analysis pass took", registry=r
        )
        self.analysis_last_success = Gauge(
            "runnerctl_analysis_last_success_timestamp_seconds",
            "When the last analysis pass finished (Unix time); 0 before the first",
            registry=r,
        )
        self.analysis_failures = Counter(
            "runnerctl_analysis_failures_total", "Analysis passes that raised", registry=r
        )
        self.screen_seconds = Histogram(
            "runnerctl_analysis_screen_duration_seconds",
            "Time one screen of new rows against the last full pass took",
            registry=r,
        )
        self.provisional = Gauge(
            "runnerctl_analysis_provisional",
            "Places and outages the last screen raised, awaiting the full pass it started",
            registry=r,
        )
        self.analysis_pending = Gauge(
            "runnerctl_analysis_pending", "1 while stored data awaits an analysis pass", registry=r
        )
        self.outages = Gauge("runnerctl_outages", "Outage windows found in the stored history", registry=r)
        self.leader = Gauge(
            "runnerctl_leader",
            "1 while this replica holds the leader lease (analysis, remediation)",
            registry=r,
        )
        self.retention_pruned = Counter(
            "runnerctl_retention_pruned_rows_total",
            "Rows retention deleted beyond the analysis window, by table",
            ["table"],
            registry=r,
        )
        for table in ("results", "readings", "reports"):
            self.retention_pruned.labels(table)
        self.remediation_actions = Counter(
            "runnerctl_remediation_actions_total",
            "Cordons, uncordons and drains, by who asked (controller, operator) and what came of it",
            ["action", "actor", "result"],
            registry=r,
        )
        self.remediation_blocked = Counter(
            "runnerctl_remediation_blocked_total",
            "Remediation passes that refused to act on a sick runner, by reason "
            "(budget, storm, no_provider, rerun_cap); counted on every pass that refuses",
            ["reason"],
            registry=r,
        )
        for reason in ("budget", "storm", "no_provider", "rerun_cap"):
            self.remediation_blocked.labels(reason)
        self.reruns = Counter(
            "runnerctl_remediation_reruns_total",
            "Reruns by outcome: submitted, then passed or failed; submit_failed, unknown (not resubmitted)",
            ["outcome"],
            registry=r,
        )
        for outcome in ("submitted", "passed", "failed", "submit_failed", "unknown"):
            self.reruns.labels(outcome)
        self.provider_calls = Counter(
            "runnerctl_provider_requests_total",
            "Calls to CI providers by provider and method",
            ["provider", "method"],
            registry=r,
        )
        self.provider_errors = Counter(
            "runnerctl_provider_errors_total",
            "CI provider calls that failed, by provider, method and kind (unavailable, rejected, not_found)",
            ["provider", "method", "kind"],
            registry=r,
        )

    def observe_ingest(self, kind: str, status: int, size: int, seconds: float) -> None:
        accepted = status < 400
        self.ingest_requests.labels(kind, "accepted" if accepted else "rejected").inc()
        self.ingest_latency.labels(kind).observe(seconds)
        if accepted:
            self.ingest_bytes.labels(kind).inc(size)
        else:
            self.ingest_rejected.labels(kind, str(status)).inc()
