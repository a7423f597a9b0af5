"""The job record: one CI job's outcome on one runner, a public format beside the test result.

Example (a `kind: job` line in NDJSON, or an item of `POST /v1/jobs`)::

    {"job_id": "build-881", "run_id": "run-9", "attempt": 1, "name": "unit-tests",
     "started": "2026-09-21T10:00:00Z", "finished": "2026-09-21T10:00:06Z",
     "conclusion": "failure", "failed_step": "checkout", "failure_reason": "runner_system_failure",
     "tests": 0, "runner": {"id": "linux-03", "pool": "linux"}}

A job that fails within seconds with no test result is what a black-hole runner does (a full disk before
checkout, a dead container daemon): the test results alone never show it, since none arrive.
Only `job_id`, `name`, `finished`, `conclusion` and `runner.id` are required.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from common.identity import RunnerIdentity
from common.timeutil import EventTime


class JobConclusion(StrEnum):
    success = "success"
    failure = "failure"
    cancelled = "cancelled"
    timed_out = "timed_out"
    # The CI system says the infrastructure failed the job, not its script (GitLab's
    # runner_system_failure, Buildkite's lost agent, Buildbot's EXCEPTION).
    system_failure = "system_failure"


# Conclusions that say something about the runner; a cancelled job says nothing either way.
JUDGED_CONCLUSIONS = frozenset(
    {JobConclusion.success, JobConclusion.failure, JobConclusion.timed_out, JobConclusion.system_failure}
)


class JobRecord(BaseModel):
    """One finished attempt of one CI job on one runner."""

    # `kind` (NDJSON's record type) and providers' own fields are ignored, not refused.
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    job_id: str = Field(min_length=1, max_length=500)
    run_id: str | None = Field(default=None, max_length=500)
    attempt: int | None = Field(default=None, ge=0, le=1_000_000)
    name: str = Field(min_length=1, max_length=500, description="the job's kind: jobs of one name are peers")
    started: EventTime | None = None
    finished: EventTime
    conclusion: JobConclusion
    failed_step: str | None = Field(default=None, max_length=500)
    failure_reason: str | None = Field(
        default=None, max_length=200, description="the provider's own reason, as it spells it"
    )
    # Bounded like every stored integer: PostgreSQL's integer column holds at most 2**31 - 1.
    tests: int | None = Field(
        default=None,
        ge=0,
        le=100_000_000,
        description="test results the job produced; None: unknown (counted from results)",
    )
    commit: str | None = Field(default=None, max_length=200)
    runner: RunnerIdentity

    @model_validator(mode="after")
    def _started_before_finished(self) -> JobRecord:
        if self.started is not None and self.started > self.finished:
            raise ValueError("started is after finished")
        return self

    @property
    def duration_s(self) -> float | None:
        if self.started is None:
            return None
        return (self.finished - self.started).total_seconds()
