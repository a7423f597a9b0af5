"""Buildbot 4.x through its REST API and JSON-RPC control: pause/unpause a worker, rebuild a build.

Checked against a real Buildbot 4.3 master (tests/e2e): a paused worker finishes its build and takes no
new ones; `rebuild` answers `[buildsetid, {"<builderid>": buildrequestid}]` and the new request goes to
any other worker of the builder. The build id is what our JUnit uploads call the job id.
"""

from __future__ import annotations

import logging
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from controller.errors import ProviderError, ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.providers.base import JobRef, Outcome, RunnerState

NAME = "buildbot"
log = logging.getLogger(__name__)
# Buildbot result codes: 0 success, 1 warnings, 2 failure, 3 skipped, 4 exception, 5 retry, 6 cancelled.
PASSED_RESULTS = (0, 1)
# RETRY means Buildbot resubmitted the request itself (lost worker): the request is still pending.
PENDING_RESULTS = (5,)
MAX_RETRY_AFTER_S = 30.0


class _BoundedRetry(Retry):
    """Honours Retry-After, but never sleeps longer than MAX_RETRY_AFTER_S: every wait is bounded."""

    def get_retry_after(self, response: Any) -> float | None:
        found = super().get_retry_after(response)
        return None if found is None else min(found, MAX_RETRY_AFTER_S)


def _session(retry_status: bool, username: str | None, password: str | None) -> requests.Session:
    session = requests.Session()
    retry = _BoundedRetry(
        total=3,
        connect=3,
        read=2 if retry_status else 0,
        status=3 if retry_status else 0,
        backoff_factor=0.5,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=None,  # only pause/unpause/GET go through the retrying session; all idempotent
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    if username and password:
        session.auth = (username, password)
    session.headers["User-Agent"] = "runner-controller"
    return session


class BuildbotProvider:
    NAME = NAME

    def __init__(
        self,
        url: str,
        username: str | None = None,
        password: str | None = None,
        timeout_s: float = 10.0,
        **_ignored: Any,
    ) -> None:
        self.api = url.rstrip("/") + "/api/v2/"
        self.timeout = (min(timeout_s, 5.0), timeout_s)
        self._safe = _session(True, username, password)
        # A rebuild is not idempotent: a 5xx after the master queued it must not queue a second one.
        self._once = _session(False, username, password)

    def __repr__(self) -> str:  # never the credentials
        return f"BuildbotProvider({self.api!r})"

    # -- the protocol ---------------------------------------------------------------------------------

    def cordon(self, runner: str, reason: str) -> None:
        self._rpc(self._safe, f"workers/{runner}", "pause", {"reason": reason}, runner)

    def uncordon(self, runner: str) -> None:
        self._rpc(self._safe, f"workers/{runner}", "unpause", {}, runner)

    def state(self, runner: str) -> RunnerState:
        workers = self._get(f"workers/{runner}", {}, runner).get("workers") or []
        if not workers:
            raise RunnerNotFound(NAME, f"no worker named {runner!r}")
        worker = workers[0]
        running = self._get(
            "builds", {"workerid": worker["workerid"], "complete": "false", "limit": 1}, runner
        )
        paused = bool(worker.get("paused")) or bool(worker.get("graceful"))
        return RunnerState(
            online=bool(worker.get("connected_to")),
            busy=bool(running.get("builds")),
            cordoned=paused,
            reason=worker.get("pause_reason") if paused else None,
        )

    def rerun(self, job: JobRef) -> JobRef:
        result = self._rpc(self._once, f"builds/{job.id}", "rebuild", {}, f"build {job.id}")
        try:
            bsid, brids = result
            brid = next(iter(brids.values()))
        except (TypeError, ValueError, StopIteration) as error:
            raise ProviderError(NAME, f"unexpected rebuild answer {result!r}") from error
        return JobRef(id=f"buildrequest:{brid}", run_id=str(bsid))

    def job_outcome(self, job: JobRef) -> Outcome:
        if job.id.startswith("buildrequest:"):
            request = job.id.partition(":")[2]
            builds = self._get("builds", {"buildrequestid": request, "order": "-buildid"}, job.id)["builds"]
        else:
            builds = self._get(f"builds/{job.id}", {}, job.id)["builds"]
        if not builds or not builds[0].get("complete"):
            return "pending"
        results = builds[0].get("results")
        if results in PENDING_RESULTS:
            return "pending"
        return "passed" if results in PASSED_RESULTS else "failed"

    @staticmethod
    def pushed_outcome(build: dict[str, Any]) -> tuple[JobRef, Outcome] | None:
        """The rerun identity and outcome in an HttpStatusPush body (None: not finished, or not a build).

        Buildbot does not sign these pushes: the endpoint that receives them authenticates a header token.
        """
        request = build.get("buildrequestid")
        if not isinstance(request, int) or not build.get("complete"):
            return None
        results = build.get("results")
        if results in PENDING_RESULTS or results is None:
            return None
        return JobRef(f"buildrequest:{request}"), "passed" if results in PASSED_RESULTS else "failed"

    def build_of_request(self, job: JobRef) -> dict[str, Any] | None:
        """The newest build of a rerun's request, with the worker that ran it (for the audit log)."""
        request = job.id.partition(":")[2]
        builds = self._get(
            "builds", {"buildrequestid": request, "order": "-buildid", "property": "workername"}, job.id
        )["builds"]
        return builds[0] if builds else None

    # -- HTTP -----------------------------------------------------------------------------------------

    def _get(self, path: str, params: dict[str, Any], what: str) -> dict[str, Any]:
        response = self._send(self._safe, "GET", path, what, params=params)
        body: dict[str, Any] = response.json()
        return body

    def _rpc(
        self, session: requests.Session, path: str, method: str, params: dict[str, Any], what: str
    ) -> Any:
        payload = {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
        response = self._send(session, "POST", path, what, json=payload)
        body = response.json()
        if "error" in body:
            raise ProviderRejected(NAME, f"{method} {what}: {body['error']}", response.status_code)
        return body.get("result")

    def _send(
        self, session: requests.Session, method: str, path: str, what: str, **kwargs: Any
    ) -> requests.Response:
        try:
            response = session.request(method, self.api + path, timeout=self.timeout, **kwargs)
        except requests.Timeout as error:
            raise ProviderUnavailable(NAME, f"{method} {path}: timed out") from error
        except requests.RequestException as error:  # connection refused, reset, too many retries
            raise ProviderUnavailable(NAME, f"{method} {path}: {type(error).__name__}") from error
        status = response.status_code
        if status == 404:
            raise RunnerNotFound(NAME, f"{what} not found")
        if status == 429 or status >= 500:
            raise ProviderUnavailable(
                NAME, f"{method} {path}: HTTP {status}", retry_after=_retry_after(response)
            )
        if status >= 400:
            raise ProviderRejected(NAME, f"{method} {path}: HTTP {status}: {response.text[:200]}", status)
        return response


def _retry_after(response: requests.Response) -> float | None:
    try:
        return float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
