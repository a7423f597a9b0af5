"""Prometheus metrics, one registry per app so several apps (tests, replicas in one process) never clash."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


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
        self.agent_reports_dropped = Counter(
            "runnerctl_agent_spool_dropped_reports_total",
            "Reports agents say their spool had to drop",
            ["runner"],
            registry=r,
        )
        self.requests = Counter(
            "runnerctl_http_requests_total",
            "HTTP requests by route and status",
            ["route", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "runnerctl_http_request_duration_seconds", "HTTP request latency by route", ["route"], registry=r
        )
        self.incidents = Gauge(
            "runnerctl_incidents",
            "Open incidents by kind, state and dimension",
            ["kind", "state", "dimension"],
            registry=r,
        )
        self.analysis_seconds = Histogram(
            "runnerctl_analysis_duration_seconds", "Time one analysis pass took", registry=r
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
