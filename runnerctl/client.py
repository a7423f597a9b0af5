"""The HTTP client of the controller: requests with urllib3 retries, errors turned into one message."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from runnerctl.config import Target


class ApiError(Exception):
    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Client:
    def __init__(self, target: Target, timeout: float = 30.0, retries: int = 4) -> None:
        self.target = target
        self.timeout = timeout
        self.session = requests.Session()
        retry = Retry(
            total=retries,
            backoff_factor=0.5,
            # 429: this token is over its limits (controller/api/limits.py); Retry-After says when.
            status_forcelist=(429, 502, 503, 504),
            allowed_methods=frozenset({"GET", "PUT", "DELETE", "POST"}),  # our POSTs are idempotent
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        adapter = HTTPAdapter(max_retries=retry)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if target.token:
            self.session.headers["Authorization"] = f"Bearer {target.token}"
        self.session.headers["User-Agent"] = "runnerctl"

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        url = self.target.server + path
        try:
            response = self.session.request(
                method, url, timeout=kwargs.pop("timeout", self.timeout), **kwargs
            )
        except requests.ConnectionError as error:
            raise ApiError(
                None, f"cannot reach the controller at {self.target.server}: {_cause(error)}"
            ) from error
        except requests.Timeout as error:
            raise ApiError(None, f"the controller at {self.target.server} did not answer in time") from error
        if response.status_code >= 400:
            raise ApiError(response.status_code, _message(response))
        if not response.content:
            return None
        return response.json()

    def get(self, path: str, params: dict[str, Any] | Iterable[tuple[str, Any]] | None = None) -> Any:
        return self.request("GET", path, params=params)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)


def _message(response: requests.Response) -> str:
    try:
        body = response.json()
        detail = body.get("detail") if isinstance(body, dict) else None
    except ValueError:
        detail = None
    detail = detail or response.text[:300] or response.reason
    hint = {
        401: " (check --token or RUNNERCTL_TOKEN)",
        403: " (use a token with one of those roles: runner-controller token create --role ROLE)",
    }
    return f"{detail}{hint.get(response.status_code, '')}"


def _cause(error: requests.ConnectionError) -> str:
    """The reason in a few words. urllib3's text repeats the pool, the retries and the URL; the OS's own
    words for the last try (connection refused, name or service not known) are at the end of the chain
    of causes, under the MaxRetryError requests wraps."""
    found: BaseException | None = (
        error.args[0] if error.args and isinstance(error.args[0], BaseException) else error
    )
    found = getattr(found, "reason", None) or found
    while found is not None:
        strerror = getattr(found, "strerror", None)
        if isinstance(found, OSError) and strerror:
            return str(strerror).lower()
        found = found.__cause__ or found.__context__
    return _short(error)


def _short(error: Exception) -> str:
    text = str(error)
    return text if len(text) < 200 else text[:200] + "…"
