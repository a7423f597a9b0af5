"""The HTTP client every provider shares: timeouts on every call, bounded retries on 5xx/429 that honour
Retry-After, and one mapping from HTTP failures to the provider error hierarchy.

Two sessions per provider: `safe` retries (reads and idempotent writes such as a pause), `once` never
retries a request the server may already have acted on (a rerun: a 5xx after the provider queued it
must not queue a second one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from controller.errors import ProviderBusy, ProviderRejected, ProviderUnavailable, RunnerNotFound

log = logging.getLogger(__name__)
MAX_RETRY_AFTER_S = 30.0
RETRYABLE = (429, 500, 502, 503, 504)


class _BoundedRetry(Retry):
    """Honours Retry-After, but never sleeps longer than MAX_RETRY_AFTER_S: every wait is bounded."""

    def get_retry_after(self, response: Any) -> float | None:
        found = super().get_retry_after(response)
        return None if found is None else min(found, MAX_RETRY_AFTER_S)


def session(retry: bool, auth: Any = None, headers: Mapping[str, str] | None = None) -> requests.Session:
    s = requests.Session()
    policy = _BoundedRetry(
        total=3,
        connect=3,
        read=2 if retry else 0,
        status=3 if retry else 0,
        backoff_factor=0.5,
        status_forcelist=RETRYABLE,
        allowed_methods=None,  # the caller picks the session: only idempotent calls go through `safe`
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    adapter = HTTPAdapter(max_retries=policy)
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    s.auth = auth
    s.headers["User-Agent"] = "runner-controller"
    s.headers.update(headers or {})
    return s


@dataclass(frozen=True)
class Exchange:
    """What the provider answered, short enough for the audit log (never request headers: credentials)."""

    method: str
    url: str
    status: int
    body: str

    def summary(self) -> str:
        return f"{self.method} {self.url} -> HTTP {self.status} {self.body}".rstrip()


class ProviderHttp:
    """One provider's API at `base`. Every call is bounded by `timeout_s`."""

    def __init__(
        self,
        provider: str,
        base: str,
        auth: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        on_exchange: Callable[[Exchange], None] | None = None,
    ) -> None:
        self.provider = provider
        self.base = base.rstrip("/") + "/"
        self.timeout = (min(timeout_s, 5.0), timeout_s)
        self.safe = session(True, auth, headers)
        self.once = session(False, auth, headers)
        self.last: Exchange | None = None
        self._on_exchange = on_exchange

    def __repr__(self) -> str:  # never the credentials
        return f"ProviderHttp({self.provider!r}, {self.base!r})"

    def url(self, path: str) -> str:
        return self.base + path.lstrip("/")

    def send(
        self,
        method: str,
        path: str,
        what: str,
        *,
        retry: bool = True,
        ok: tuple[int, ...] = (),
        **kwargs: Any,
    ) -> requests.Response:
        """Send one call and map failures: 404 → RunnerNotFound, 5xx/timeouts → ProviderUnavailable, 429 →
        ProviderBusy (both with Retry-After), other 4xx → ProviderRejected. Statuses in `ok` are returned, not raised."""
        chosen = self.safe if retry else self.once
        url = self.url(path)
        try:
            response = chosen.request(method, url, timeout=self.timeout, **kwargs)
        except requests.RequestException as error:  # timed out, connection refused, reset, too many retries
            raise ProviderUnavailable(self.provider, f"{method} {path}: {_why(error)}") from error
        self.last = Exchange(method, path, response.status_code, _short(response.text))
        if self._on_exchange is not None:
            self._on_exchange(self.last)
        status = response.status_code
        log.debug("%s %s %s -> %s", self.provider, method, path, status)
        if status in ok:
            return response
        if status == 404:
            raise RunnerNotFound(self.provider, f"{what} not found ({method} {path}: HTTP 404)")
        if status == 429:
            raise ProviderBusy(self.provider, f"{method} {path}: HTTP 429", retry_after=retry_after(response))
        if status >= 500:
            raise ProviderUnavailable(
                self.provider, f"{method} {path}: HTTP {status}", retry_after=retry_after(response)
            )
        if status >= 400:
            raise ProviderRejected(
                self.provider, f"{method} {path}: HTTP {status}: {_short(response.text)}", status
            )
        return response

    def json(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        response = self.send(method, path, what, **kwargs)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as error:
            raise ProviderRejected(
                self.provider, f"{method} {path}: not JSON: {_short(response.text)}", response.status_code
            ) from error


def retry_after(response: requests.Response) -> float | None:
    try:
        return float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None


def _why(error: requests.RequestException) -> str:
    """What went wrong, in the audit log's words. A read timeout after urllib3 used up its retries (for a
    rerun: none) reaches us as a ConnectionError wrapping the timeout: still say it timed out."""
    reason = getattr(error.args[0], "reason", None) if error.args else None
    if isinstance(error, requests.Timeout) or isinstance(reason, urllib3.exceptions.TimeoutError):
        return "timed out"
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        return "could not connect"
    return type(reason or error).__name__


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
