"""Controller settings: flags first, then `RUNNER_CONTROLLER_*` environment variables."""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ControllerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RUNNER_CONTROLLER_", extra="forbid")

    db: str = Field(default="", description="database URL; empty means runnerctl.db in the working directory")
    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    max_results_per_request: int = Field(default=200_000, ge=1)
    # Per-client limits (controller/api/limits.py): 429 with Retry-After past them.
    max_in_flight_per_client: int = Field(
        default=16, ge=1, description="requests one token may have in progress at once"
    )
    client_rate_per_s: dict[str, float] = Field(
        default_factory=dict,
        description='requests a second one token of a role may send on average, e.g. {"agent": 1}; '
        "a role not listed has no rate limit",
    )
    client_burst: int = Field(default=60, ge=1, description="requests a rate-limited token may send at once")
    analysis_interval_s: float = Field(default=10.0, ge=0, description="0 disables the background loop")
    full_analysis_interval_s: float = Field(
        default=60.0,
        ge=0,
        description="the background loop re-reads the whole window at most this often; between, it screens "
        "new rows against the last full pass and runs a full one at once when they raise something; 0: always full",
    )
    fresh_reads: bool = Field(
        default=True, description="reads of verdicts first analyse whatever was stored since the last pass"
    )
    log_level: str = "info"
    header_timeout_s: float = Field(
        default=10.0, gt=0, description="a request's headers must arrive within this long of its first byte"
    )
    request_timeout_s: float = Field(
        default=60.0, gt=0, description="a whole request, body included, must arrive within this long"
    )

    # Replicas (docs/reliability.md, "Replicas and leadership"): one leader analyses, remediates, prunes.
    leader_lease_ttl_s: float = Field(
        default=15.0, ge=0.3, description="a killed leader is replaced within this plus a third of it"
    )
    analysis_window_days: float = Field(
        default=90.0, ge=1, description="the analysis reads this far back; retention prunes only beyond"
    )
    retention_interval_s: float = Field(
        default=3600.0, ge=0, description="how often the leader prunes beyond the window; 0 never"
    )
    retention_batch_rows: int = Field(default=5000, ge=1, description="rows deleted per transaction")

    # Remediation. Defaults are conservative: decide and explain, act on nothing.
    remediation_mode: str = Field(
        default="observe", pattern="^(observe|approve|auto)$", description="default for pools not listed"
    )
    remediation_policies: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description='per pool, e.g. {"linux": {"mode": "auto", "budget_ratio": 0.2}}'
    )
    remediation_interval_s: float = Field(default=5.0, ge=0, description="0 disables the remediation loop")
    storm_ratio: float = Field(
        default=0.3, gt=0, le=1, description="more than this share of the fleet sick at once: act on nothing"
    )
    storm_min_runners: int = Field(
        default=3, ge=1, description="a storm needs at least this many sick runners"
    )
    # CI providers: {"buildbot": {"url": "http://127.0.0.1:8010/", "username": ..., "password": ...}}.
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict, repr=False)
    # Placements (controller/placement/, docs/providers.md "Kubernetes-hosted runners"): where a sick
    # machine is a node, the cluster drains it: {"kubernetes": {"kubeconfig": ..., "fleets": {"linux": ...}}}.
    placements: dict[str, dict[str, Any]] = Field(default_factory=dict, repr=False)
    poll_interval_s: float = Field(
        default=15.0,
        ge=0,
        description="how often providers without webhooks (Jenkins) are polled; 0 disables",
    )
    pool_providers: dict[str, str] = Field(
        default_factory=dict, description="pool -> provider, for runners whose identity names none"
    )
