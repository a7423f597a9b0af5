"""Errors a CI provider client may raise; nothing else leaves a provider module.

    ProviderError                 the provider did not do what was asked
     ├── ProviderUnavailable      timeout, connection refused, 5xx, 429: try again later (`retry_after`)
     │    └── ProviderBusy        429: refused before acting, so even a call that is not idempotent may repeat
     ├── ProviderRejected         a 4xx other than 404/429: the request or our credentials are wrong
     └── RunnerNotFound           the provider does not know this runner (or build)

Remediation fails closed on all of them: it takes no action it cannot confirm, and says why.
"""

from __future__ import annotations


class ProviderError(Exception):
    def __init__(self, provider: str, message: str) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.message = message


class ProviderUnavailable(ProviderError):
    def __init__(self, provider: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(provider, message)
        self.retry_after = retry_after


class ProviderBusy(ProviderUnavailable):
    """Rate limited (HTTP 429): the provider did nothing, unlike a timeout or a 5xx, which may come after
    it acted."""


class ProviderRejected(ProviderError):
    def __init__(self, provider: str, message: str, status: int | None = None) -> None:
        super().__init__(provider, message)
        self.status = status


class RunnerNotFound(ProviderError):
    pass
