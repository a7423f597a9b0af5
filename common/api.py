"""The controller API's response bodies, shared with runnerctl so both sides agree on the shape."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from common.identity import StoredIdentity
from common.jobs import JobConclusion


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")


class RunnerDirective(_Response):
    """What the controller asks of a runner's host, for what a provider's API cannot do (GitHub has no
    pause): `cordoned` means take no new jobs; the agent runs its `on_cordon` / `on_uncordon` command."""

    runner: str
    cordoned: bool
    reason: str | None = None


class ReportsAccepted(_Response):
    accepted: int
    new: list[int] = Field(description="sequence numbers stored for the first time")
    duplicate: list[int] = Field(description="sequence numbers already stored; nothing written for them")
    directives: list[RunnerDirective] = Field(
        default_factory=list, description="one per runner in the batch: is it cordoned"
    )


class ResultsAccepted(_Response):
    accepted: int
    new: int
    duplicate: int


class ErrorBody(_Response):
    detail: Any


class Health(_Response):
    health: str = "healthy"  # healthy | warning | suspect | sick
    dimension: str | None = None
    incident_id: str | None = None
    warnings: list[str] = Field(default_factory=list)


class RunnerView(_Response):
    identity: StoredIdentity
    first_seen: str | None = None
    last_seen: str | None = None
    last_report_at: str | None = None
    executions: int = 0
    failures: int = 0
    health: Health = Field(default_factory=Health)
    cordon: dict[str, Any] | None = None
    # Back in rotation on trial after the controller's cordon: its next jobs decide (remediation.md).
    probation: dict[str, Any] | None = None
    # The newest probe before return (a pinned rerun while it stays cordoned), open or ended.
    probe: dict[str, Any] | None = None
    # Sick, and the controller would cordon it, but the pool's disruption budget holds it back for now.
    held: dict[str, Any] | None = None
    last_readings: list[dict[str, Any]] = Field(default_factory=list)
    # Its CI jobs over the analysis window (common/jobs.py): what shows a runner whose jobs die before
    # any test. Cancelled jobs say nothing about the runner and are not counted.
    jobs: int = Field(default=0, description="jobs that ran to a conclusion other than cancelled")
    job_failures: int = Field(default=0, description="of those, failed, timed out or failed by the system")
    job_failure_rate: float | None = Field(default=None, description="job_failures / jobs; None without jobs")
    median_job_duration_s: float | None = Field(
        default=None, description="median of those jobs' durations, where their start is known"
    )


class RunnerList(_Response):
    items: list[RunnerView]


class JobView(_Response):
    """A stored job record as `GET /v1/jobs` lists it (common/jobs.py has the fields' meaning)."""

    job_id: str
    run_id: str | None = None
    attempt: int | None = None
    name: str
    conclusion: JobConclusion
    started: str | None = None
    finished: str
    duration_s: float | None = None
    failed_step: str | None = None
    failure_reason: str | None = None
    tests: int | None = None
    commit: str | None = None
    runner: str
    pool: str
    machine: str
    provider: str | None = None


class JobList(_Response):
    items: list[JobView]


class NodePod(_Response):
    """A runner pod on a node: busy ones are left to finish by a drain, idle ones deleted."""

    namespace: str
    name: str
    busy: bool
    why: str


class NodeView(_Response):
    """A Kubernetes node of a configured fleet, as runnerctl sees it (`runnerctl get nodes`)."""

    name: str
    pool: str
    runner: str = Field(description="the fleet's runner kind: arc, gitlab, buildkite")
    status: str = Field(description="schedulable, cordoned, probation, or cordoned by someone else")
    cordoned: bool = Field(description="spec.unschedulable")
    runnerctl: bool = Field(description="held by runnerctl (its runnerctl.io/cordoned label)")
    cordoned_by: str | None = Field(
        default=None, description="runner-controller, an operator's token name, or `someone else`"
    )
    tainted: bool = Field(default=False, description="runnerctl's runnerctl.io/sick:NoSchedule taint")
    incident: str | None = None
    cordoned_at: str | None = None
    probation_since: str | None = None
    busy: int = 0
    idle: int = 0
    pods: list[NodePod] = Field(default_factory=list)
    # Only for one node (GET /v1/nodes/{name}): its audit entries, newest first.
    actions: list[dict[str, Any]] = Field(default_factory=list)


class NodeList(_Response):
    items: list[NodeView]
