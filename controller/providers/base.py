"""The one interface every CI provider implements: cordon, uncordon, state, rerun, job outcome.

Each method talks to the provider once and raises only `controller.errors.ProviderError` subclasses;
retries, budgets and bookkeeping belong to remediation, not here.

How jobs come in is the provider's choice, through one of two small interfaces beside it:
`WebhookReceiver` (the provider pushes signed deliveries to `POST /v1/webhooks/{name}`) or `Poller`
(the controller asks, for providers with no webhooks). Both yield `JobEvent`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from common.identity import RunnerIdentity
from common.jobs import JobConclusion
from common.results import TestResult

Outcome = Literal["pending", "passed", "failed"]
JobState = Literal["queued", "running", "passed", "failed", "cancelled"]


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


@dataclass(frozen=True)
class JobEvent:
    """A CI job changed state, as the provider reported it.

    `runner` is None while the job waits for one. `rerun_ids` are the other ids a rerun we asked for
    may be known by (a provider whose rerun call returns no new id names the attempt another way).
    `tests` are the job's own test results where the provider has them (a JUnit report): stored
    instead of one record for the job as a whole, so a failing job is not counted twice.

    The rest is what the job record (common/jobs.py) needs, each None where the provider does not say:
    `conclusion` is set once the job finished having run (None for a skipped job, which ran nowhere),
    `failed_step` and `failure_reason` as the provider spells them, `test_count` how many test results
    came with the job (None: unknown, not zero).
    """

    job: JobRef
    name: str
    state: JobState
    time: datetime
    runner: RunnerIdentity | None
    attempt: int | None = None
    rerun_ids: tuple[str, ...] = ()
    tests: tuple[TestResult, ...] = ()
    conclusion: JobConclusion | None = None
    started: datetime | None = None
    failed_step: str | None = None
    failure_reason: str | None = None
    test_count: int | None = None


class WebhookRejected(Exception):
    """The delivery is not provably from the provider (missing, bad or stale signature): 401."""


class PayloadInvalid(Exception):
    """Authentic, but not a body this provider sends for this event: 422 naming the problem."""


@runtime_checkable
class WebhookReceiver(Protocol):
    NAME: str

    def verify(self, headers: Mapping[str, str], body: bytes, now_s: float) -> None:
        """Raise WebhookRejected unless the delivery carries a valid, fresh signature or token.
        Header names are lower-case. Comparisons are constant-time."""

    def delivery_id(self, headers: Mapping[str, str], body: bytes) -> str | None:
        """The provider's id for this delivery, stable across its redeliveries (None: it has none)."""
        ...

    def job_events(self, headers: Mapping[str, str], body: bytes) -> list[JobEvent] | None:
        """The job events in a verified delivery; None for an event type we do not use (202).
        Raises PayloadInvalid for a body that does not parse as the event it claims to be."""
        ...


@runtime_checkable
class RenewsCordon(Protocol):
    """A provider whose pause lapses by itself (Buildkite's `timeout_in_minutes`): the remediation loop
    calls this every pass for each runner the controller or an operator holds cordoned."""

    def renew_cordon(self, runner: str, reason: str) -> None: ...


@dataclass(frozen=True)
class ProbeResult:
    """Where a probe job ran and how it ended. `job` is the job that ran (its id is what its results
    carry), None until it starts; `ran_on` is checked by the caller: a probe run elsewhere proves nothing."""

    outcome: Outcome
    job: JobRef | None = None
    ran_on: str | None = None


@runtime_checkable
class Prober(Protocol):
    """A provider that can run one job on a runner it holds cordoned, and on no other runner, while the
    runner stays cordoned to every other job: the probe that decides whether it returns to rotation.
    Providers that cannot pin a job keep the half-open probation (remediation/probation.py)."""

    # False when pinning needs something on the provider's side this installation has not set up
    # (Buildbot's master-side hook): the caller then keeps the half-open probation.
    pins_probes: bool

    def probe(self, runner: str, job: JobRef, reason: str) -> JobRef:
        """Queue a rerun of `job` (one that failed on `runner`) that only `runner` may take; returns the
        probe's identity. Not idempotent, like `rerun`: a timeout or 5xx may have queued it."""
        ...

    def probe_result(self, probe: JobRef) -> ProbeResult: ...


@runtime_checkable
class Poller(Protocol):
    NAME: str

    def poll(self, cursor: str | None) -> tuple[list[JobEvent], str | None]:
        """Job events since `cursor` (None: start from now, not from the beginning of history) and the
        cursor to pass next time. Raises ProviderError subclasses; the caller keeps the old cursor."""
        ...
