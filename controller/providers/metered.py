"""A provider wrapped so every call and every error is counted, whoever made it (loop, operator, push)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from controller.errors import ProviderError, ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.metrics import Metrics
from controller.providers.base import JobRef, Outcome, Provider, RunnerState

T = TypeVar("T")


def error_kind(error: ProviderError) -> str:
    if isinstance(error, ProviderUnavailable):
        return "unavailable"
    if isinstance(error, ProviderRejected):
        return "rejected"
    if isinstance(error, RunnerNotFound):
        return "not_found"
    return "other"


class MeteredProvider:
    def __init__(self, inner: Provider, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics
        self.NAME = inner.NAME

    def __getattr__(self, name: str) -> object:
        # What a provider offers beyond the protocol (renewing a pause, the limits `explain` shows)
        # passes through, uncounted.
        return getattr(self.inner, name)

    def _call(self, method: str, call: Callable[[], T]) -> T:
        self.metrics.provider_calls.labels(self.NAME, method).inc()
        try:
            return call()
        except ProviderError as error:
            self.metrics.provider_errors.labels(self.NAME, method, error_kind(error)).inc()
            raise

    def cordon(self, runner: str, reason: str) -> None:
        self._call("cordon", lambda: self.inner.cordon(runner, reason))

    def uncordon(self, runner: str) -> None:
        self._call("uncordon", lambda: self.inner.uncordon(runner))

    def state(self, runner: str) -> RunnerState:
        return self._call("state", lambda: self.inner.state(runner))

    def rerun(self, job: JobRef) -> JobRef:
        return self._call("rerun", lambda: self.inner.rerun(job))

    def job_outcome(self, job: JobRef) -> Outcome:
        return self._call("job_outcome", lambda: self.inner.job_outcome(job))


def metered(providers: dict[str, Provider], metrics: Metrics) -> dict[str, Provider]:
    return {name: MeteredProvider(provider, metrics) for name, provider in providers.items()}
