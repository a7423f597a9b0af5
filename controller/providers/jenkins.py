"""Jenkins: mark a node temporarily offline, build a job again, and poll builds with their JUnit reports.

From jenkinsci/jenkins (core/src/main/java/hudson/model/{Computer,Run,AbstractBuild,Queue,Job}.java,
jenkins/model/ParameterizedJobMixIn.java, hudson/security/csrf/*, jenkins/security/ApiCrumbExclusion.java)
and jenkinsci/junit-plugin (hudson/tasks/junit/{TestResult,SuiteResult,CaseResult}.java); see
docs/providers-buildkite-jenkins.md.

Core Jenkins sends no webhooks, so this provider is a `Poller`. Our runner id is the node name (the
built-in node, which builds report as `builtOn: ""`, is `built-in`). Job ids are `<job>#<number>`;
a rerun is a new build, known as `<job>#queue-<id>` until it has a number, which the poll maps back
through the build's exported `queueId`.

Quirks handled here:
- `toggleOffline` flips the node's state, so uncordon reads `temporarilyOffline` first;
  `changeOfflineCause` always sets offline and is the cordon.
- API-token basic auth needs no CSRF crumb (ApiCrumbExclusion). A password does: the crumb is bound to
  the HTTP session, so both client sessions share one cookie jar, and a 403 "No valid crumb" refreshes
  it once.
- Only freestyle-like builds export `builtOn`; Pipeline builds name no node and are skipped.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import requests

from common.identity import RunnerIdentity
from common.jobs import JobConclusion
from common.results import Outcome as TestOutcome
from common.results import TestResult
from controller.errors import ProviderError, ProviderRejected, RunnerNotFound
from controller.providers.base import JobEvent, JobRef, JobState, Outcome, RunnerState
from controller.providers.http import ProviderHttp

NAME = "jenkins"
log = logging.getLogger(__name__)
BUILT_IN = "built-in"
BUILD_FIELDS = "number,result,building,builtOn,timestamp,duration,queueId"
QUEUED = re.compile(r"^(?P<job>.+)#queue-(?P<id>\d+)$")
QUEUE_LOCATION = re.compile(r"/queue/item/(\d+)/?$")
CASE_OUTCOMES = {
    "PASSED": TestOutcome.passed,
    "FIXED": TestOutcome.passed,
    "FAILED": TestOutcome.failed,
    "REGRESSION": TestOutcome.failed,
    "SKIPPED": TestOutcome.skipped,
}


# Run.getResult (hudson.model.Result) as a job record's conclusion. UNSTABLE ran to the end with
# failing tests; NOT_BUILT never ran (a skipped stage or module), so it has no record. Core Jenkins has
# no timed-out result: the build-timeout plugin aborts (or fails) a build instead.
RECORD_CONCLUSIONS = {
    "SUCCESS": JobConclusion.success,
    "UNSTABLE": JobConclusion.failure,
    "FAILURE": JobConclusion.failure,
    "ABORTED": JobConclusion.cancelled,
}


class JenkinsProvider:
    NAME = NAME

    def __init__(
        self,
        url: str,
        jobs: list[str] | None = None,
        username: str | None = None,
        api_token: str | None = None,
        password: str | None = None,
        pool: str | None = None,
        builds_per_poll: int = 50,
        timeout_s: float = 10.0,
        **_ignored: Any,
    ) -> None:
        if api_token and password:
            raise ValueError("jenkins: give api_token or password, not both")
        secret = api_token or password
        auth = (username, secret) if username and secret else None
        self.http = ProviderHttp(NAME, url, auth=auth, timeout_s=timeout_s)
        self.http.once.cookies = self.http.safe.cookies  # the crumb is bound to one HTTP session
        self.jobs = list(jobs or [])
        self.pool = pool
        self.builds_per_poll = builds_per_poll
        self._needs_crumb = bool(password)
        self._crumb: dict[str, str] | None = None
        self._crumb_lock = threading.Lock()

    def __repr__(self) -> str:  # never the credentials
        return f"JenkinsProvider({self.http.base!r}, jobs={self.jobs!r})"

    # -- the protocol ---------------------------------------------------------------------------------

    def cordon(self, runner: str, reason: str) -> None:
        self._post(
            f"{_computer(runner)}/changeOfflineCause", f"node {runner}", params={"offlineMessage": reason}
        )

    def uncordon(self, runner: str) -> None:
        if self._computer(runner).get("temporarilyOffline"):
            self._post(f"{_computer(runner)}/toggleOffline", f"node {runner}")

    def state(self, runner: str) -> RunnerState:
        node = self._computer(runner)
        held = bool(node.get("temporarilyOffline"))
        return RunnerState(
            # No "connected" flag is exported: `offline` is also true for a node we took offline.
            online=not node.get("offline") or held,
            busy=not node.get("idle", True),
            cordoned=held,
            reason=(node.get("offlineCauseReason") or None) if held else None,
        )

    def rerun(self, job: JobRef) -> JobRef:
        name, _, _number = job.id.rpartition("#")
        if not name:
            raise ProviderRejected(NAME, f"not a Jenkins build id: {job.id!r} (want <job>#<number>)")
        # A new build of the job, never retried: a 5xx after Jenkins queued it must not queue another.
        response = self._post(f"{_job(name)}/build", f"job {name}", retry=False, ok=(201,))
        found = QUEUE_LOCATION.search(response.headers.get("Location", ""))
        if response.status_code != 201 or found is None:
            raise ProviderError(
                NAME, f"build of {name}: no queue item in the answer (HTTP {response.status_code})"
            )
        return JobRef(f"{name}#queue-{found.group(1)}", job.run_id)

    def job_outcome(self, job: JobRef) -> Outcome:
        queued = QUEUED.match(job.id)
        if queued is None:
            name, _, number = job.id.rpartition("#")
            build = self._get(f"{_job(name)}/{number}/api/json", job.id, params={"tree": "result,building"})
            return _outcome(build)
        name, item = queued.group("job"), int(queued.group("id"))
        try:
            left = self._get(f"queue/item/{item}/api/json", job.id)
        except RunnerNotFound:
            left = None  # a left item is forgotten after a few minutes: find the build by its queueId
        if left is not None:
            if left.get("cancelled"):
                return "failed"
            executable = left.get("executable")
            if not executable:
                return "pending"
            return self.job_outcome(JobRef(f"{name}#{executable['number']}"))
        for build in self._builds(name):
            if build.get("queueId") == item:
                return _outcome(build)
        raise RunnerNotFound(NAME, f"no queue item {item} and no build of {name} from it")

    # -- polling --------------------------------------------------------------------------------------

    def poll(self, cursor: str | None) -> tuple[list[JobEvent], str | None]:
        """Finished builds of the configured jobs since `cursor`: `{"<job>": {"next": N, "open": [..]}}`,
        the next build number not yet seen and the numbers seen still building."""
        state: dict[str, dict[str, Any]] = json.loads(cursor) if cursor else {}
        events: list[JobEvent] = []
        for name in self.jobs:
            builds = self._builds(name)
            mark = state.get(name)
            if mark is None:  # from now on: what is building now will be reported when it finishes
                top = max((b["number"] for b in builds), default=0)
                state[name] = {"next": top + 1, "open": sorted(b["number"] for b in builds if _running(b))}
                continue
            watched = set(mark["open"])
            fresh = [b for b in builds if b["number"] >= mark["next"] or b["number"] in watched]
            still_open = []
            for build in sorted(fresh, key=lambda b: b["number"]):
                if _running(build):
                    still_open.append(build["number"])
                    continue
                event = self._event(name, build)
                if event is not None:
                    events.append(event)
            top = max((b["number"] for b in builds), default=mark["next"] - 1)
            state[name] = {"next": max(mark["next"], top + 1), "open": still_open}
        return events, json.dumps(state, sort_keys=True)

    def _event(self, name: str, build: dict[str, Any]) -> JobEvent | None:
        node = build.get("builtOn")
        runner = None
        if node is not None:  # Pipeline builds export no node
            rid = node or BUILT_IN
            runner = RunnerIdentity(id=rid, name=rid, pool=self.pool, provider=NAME)
        # `timestamp` is when the Run was created (an executor took it), `duration` how long it ran.
        started = datetime.fromtimestamp(build["timestamp"] / 1000, UTC)
        when = datetime.fromtimestamp((build["timestamp"] + (build.get("duration") or 0)) / 1000, UTC)
        job_id = f"{name}#{build['number']}"
        tests = self._tests(name, build["number"], job_id, when, runner) if runner else None
        queue_id = build.get("queueId")
        result = build.get("result")
        return JobEvent(
            job=JobRef(job_id),
            name=name,
            state=_state(result),
            time=when,
            runner=runner,
            rerun_ids=(f"{name}#queue-{queue_id}",) if queue_id else (),
            tests=tests or (),
            conclusion=RECORD_CONCLUSIONS.get(str(result)),
            started=started,
            failure_reason=None if result == "SUCCESS" else str(result),
            test_count=None if tests is None else len(tests),
        )

    def _tests(
        self, name: str, number: int, job_id: str, when: datetime, runner: RunnerIdentity
    ) -> tuple[TestResult, ...] | None:
        """The build's JUnit results; None when it published no report (how many ran is unknown)."""
        tree = "suites[cases[className,name,status,duration,errorDetails]]"
        try:
            report = self._get(f"{_job(name)}/{number}/testReport/api/json", job_id, params={"tree": tree})
        except RunnerNotFound:
            return None  # no JUnit report published for this build: the build itself is the result
        results = []
        for suite in report.get("suites") or []:
            for case in suite.get("cases") or []:
                outcome = CASE_OUTCOMES.get(str(case.get("status")))
                if outcome is None or not case.get("name"):
                    continue
                classname = case.get("className") or ""
                test_id = case["name"] if classname in ("", case["name"]) else f"{classname}::{case['name']}"
                results.append(
                    TestResult(
                        test_id=test_id,
                        outcome=outcome,
                        time=when,
                        duration_s=max(0.0, float(case.get("duration") or 0)),
                        job_id=job_id,
                        message=case.get("errorDetails"),
                        runner=runner,
                    )
                )
        return tuple(results)

    # -- HTTP -----------------------------------------------------------------------------------------

    def _builds(self, name: str) -> list[dict[str, Any]]:
        tree = f"builds[{BUILD_FIELDS}]{{0,{self.builds_per_poll}}}"
        body = self._get(f"{_job(name)}/api/json", f"job {name}", params={"tree": tree})
        return [b for b in body.get("builds") or [] if isinstance(b.get("number"), int)]

    def _computer(self, runner: str) -> dict[str, Any]:
        tree = "offline,temporarilyOffline,idle,offlineCauseReason"
        return self._get(f"{_computer(runner)}/api/json", f"node {runner}", params={"tree": tree})

    def _get(self, path: str, what: str, **kwargs: Any) -> dict[str, Any]:
        body = self.http.json("GET", path, what, **kwargs)
        if not isinstance(body, dict):
            raise ProviderRejected(NAME, f"GET {path}: not a JSON object")
        return body

    def _post(self, path: str, what: str, *, ok: tuple[int, ...] = (), **kwargs: Any) -> requests.Response:
        # Jenkins answers its form posts with a redirect; following it would GET a page we do not need.
        ok = (*ok, 200, 302, 303, 403)
        for attempt in range(2):
            headers = self._crumb_header(refresh=attempt > 0)
            response = self.http.send(
                "POST", path, what, ok=ok, headers=headers, allow_redirects=False, **kwargs
            )
            if response.status_code != 403:
                return response
            if "crumb" not in response.text.lower() or not self._needs_crumb:
                break
        raise ProviderRejected(NAME, f"POST {path}: HTTP 403: {_first_line(response.text)}", 403)

    def _crumb_header(self, refresh: bool) -> dict[str, str]:
        if not self._needs_crumb:
            return {}
        with self._crumb_lock:
            if self._crumb is None or refresh:
                issued = self._get("crumbIssuer/api/json", "crumb issuer")
                self._crumb = {str(issued["crumbRequestField"]): str(issued["crumb"])}
            return dict(self._crumb)


def _job(name: str) -> str:
    """A job's URL path; folders nest as /job/a/job/b."""
    return "/".join(f"job/{quote(part, safe='')}" for part in name.split("/"))


def _computer(runner: str) -> str:
    return f"computer/{quote('(built-in)' if runner == BUILT_IN else runner, safe='')}"


def _running(build: dict[str, Any]) -> bool:
    return bool(build.get("building")) or build.get("result") is None


def _state(result: str | None) -> JobState:
    if result == "SUCCESS":
        return "passed"
    if result in ("FAILURE", "UNSTABLE"):  # UNSTABLE: the build ran, its tests failed
        return "failed"
    return "cancelled"  # ABORTED, NOT_BUILT


def _outcome(build: dict[str, Any]) -> Outcome:
    if _running(build):
        return "pending"
    return "passed" if build.get("result") == "SUCCESS" else "failed"


def _first_line(text: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", text).split())[:200]
