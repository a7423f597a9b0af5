"""The one interface every CI provider implements: cordon, uncordon, state, rerun, job outcome.

Each method talks to the provider once and raises only `controller.errors.ProviderError` subclasses;
retries, budgets and bookkeeping belong to remediation, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

Outcome = Literal["pending", "passed", "failed"]


@dataclass(frozen=True)
class RunnerState:
    online: bool
    busy: bool
    cordoned: bool
    cordoned_by: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class JobRef:
    """A job as the provider names it: `id` is what results carry (a Buildbot build id)."""

    id: str
    run_id: str | None = None


class Provider(Protocol):
    NAME: str

    def cordon(self, runner: str, reason: str) -> None:
        """Take no new jobs; the current one finishes. Idempotent."""

    def uncordon(self, runner: str) -> None:
        """Back into rotation. Idempotent."""

    def state(self, runner: str) -> RunnerState: ...

    def rerun(self, job: JobRef) -> JobRef:
        """Queue the job again (wherever the provider sends it) and return the new job's identity."""
        ...

    def job_outcome(self, job: JobRef) -> Outcome: ...
