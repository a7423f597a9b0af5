"""Buildbot 4.x through its REST API and JSON-RPC control: pause/unpause a worker, rebuild a build.

Checked against a real Buildbot 4.3 master (tests/e2e): a paused worker finishes its build and takes no
new ones; `rebuild` answers `[buildsetid, {"<builderid>": buildrequestid}]` and the new request goes to
any other worker of the builder. The build id is what our JUnit uploads call the job id.

Probes (`probe_hook: true`, with packaging/buildbot/runnerctl_probe.py in the master): the worker is
re-paused with a reason naming the build to probe, then that build is rebuilt; the hook lets the paused
worker start that rebuild and no other build, and keeps every other worker off it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from common.identity import RunnerIdentity
from common.jobs import JobConclusion
from controller.errors import ProviderError, ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.providers.base import JobEvent, JobRef, Outcome, PayloadInvalid, ProbeResult, RunnerState
from controller.providers.http import ProviderHttp

NAME = "buildbot"
# Buildbot result codes: 0 success, 1 warnings, 2 failure, 3 skipped, 4 exception, 5 retry, 6 cancelled.
PASSED_RESULTS = (0, 1)
# RETRY means Buildbot resubmitted the request itself (lost worker): the request is still pending.
PENDING_RESULTS = (5,)
# What the master-side hook looks for in a pause reason (packaging/buildbot/runnerctl_probe.py).
PROBE_REASON = "runnerctl: probe of build {build}: {why}"
# Result codes as a job record's conclusion. EXCEPTION is Buildbot's own failure (it quarantines the
# worker for it); RETRY is a build lost with its worker, resubmitted elsewhere: the worker's failure.
# SKIPPED ran nothing and has no record.
RECORD_CONCLUSIONS = {
    0: JobConclusion.success,
    1: JobConclusion.success,
    2: JobConclusion.failure,
    4: JobConclusion.system_failure,
    5: JobConclusion.system_failure,
    6: JobConclusion.cancelled,
}
RESULT_NAMES = ("success", "warnings", "failure", "skipped", "exception", "retry", "cancelled")
FAILED_STEP_RESULTS = (2, 4)


class BuildbotProvider:
    NAME = NAME

    def __init__(
        self,
        url: str,
        username: str | None = None,
        password: str | None = None,
        timeout_s: float = 10.0,
        probe_hook: bool = False,
        **_ignored: Any,
    ) -> None:
        auth = (username, password) if username and password else None
        # Without the hook a rebuild runs on any worker: probing would only prove other workers healthy.
        self.pins_probes = probe_hook
        self.http = ProviderHttp(NAME, url.rstrip("/") + "/api/v2/", auth=auth, timeout_s=timeout_s)

    def __repr__(self) -> str:  # never the credentials
        return f"BuildbotProvider({self.http.base!r})"

    # -- the protocol ---------------------------------------------------------------------------------

    def cordon(self, runner: str, reason: str) -> None:
        self._rpc(True, f"workers/{runner}", "pause", {"reason": reason}, runner)

    def uncordon(self, runner: str) -> None:
        self._rpc(True, f"workers/{runner}", "unpause", {}, runner)

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
        result = self._rpc(False, f"builds/{job.id}", "rebuild", {}, f"build {job.id}")
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

    # -- probes (controller.providers.base.Prober) ----------------------------------------------------

    def probe(self, runner: str, job: JobRef, reason: str) -> JobRef:
        # A rebuild's buildset names the first build of the chain (`rebuilt_buildid`), so the hook is told
        # that one; the pause must be in force before the rebuild exists, or any worker could take it.
        root = self._root_build(job.id)
        wanted = PROBE_REASON.format(build=root, why=reason)
        self._rpc(True, f"workers/{runner}", "pause", {"reason": wanted}, runner)
        if self.state(runner).reason != wanted:
            raise ProviderUnavailable(NAME, f"worker {runner} does not show the probe pause yet")
        return self.rerun(job)

    def probe_result(self, probe: JobRef) -> ProbeResult:
        build = self.build_of_request(probe)
        if build is None:
            return ProbeResult("pending")
        ran_on = ((build.get("properties") or {}).get("workername") or [None])[0]
        ran = JobRef(str(build["buildid"]))
        results = build.get("results")
        if not build.get("complete") or results in PENDING_RESULTS:
            return ProbeResult("pending", ran, ran_on)
        return ProbeResult("passed" if results in PASSED_RESULTS else "failed", ran, ran_on)

    def _root_build(self, build_id: str) -> int:
        builds = self._get(f"builds/{build_id}", {}, f"build {build_id}").get("builds") or []
        if not builds:
            raise ProviderRejected(NAME, f"no build {build_id}", 404)
        request = self._get(f"buildrequests/{builds[0]['buildrequestid']}", {}, f"build {build_id}")
        buildset = self._get(
            f"buildsets/{request['buildrequests'][0]['buildsetid']}", {}, f"build {build_id}"
        )
        rebuilt = buildset["buildsets"][0].get("rebuilt_buildid")
        return int(rebuilt) if rebuilt else int(build_id)

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

    @staticmethod
    def pushed_job(build: dict[str, Any]) -> JobEvent | None:
        """A finished build in an HttpStatusPush body as a job event for its job record; None while it
        runs, or when the body does not name its worker (the `workername` property, sent by default).

        Times are epoch seconds: the push encodes datetimes with buildbot.util.toJson. The failed step
        is read from `steps`, present only when the formatter asks for them (`want_steps=True`).
        """
        results = build.get("results")
        worker = _property(build, "workername")
        if not build.get("complete") or results not in RECORD_CONCLUSIONS or not worker:
            return None
        builder, buildset = _object(build, "builder"), _object(build, "buildset")
        finished = _epoch(build, "complete_at")
        if finished is None:
            return None  # Buildbot sets complete_at with complete; a body without it is not one to date
        return JobEvent(
            job=JobRef(str(build["buildid"]), run_id=str(buildset["bsid"]) if buildset.get("bsid") else None),
            name=str(builder.get("name") or f"builder-{build.get('builderid')}"),
            state="passed" if results in PASSED_RESULTS else "failed",
            time=finished,
            runner=RunnerIdentity(id=worker, name=worker, provider=NAME),
            conclusion=RECORD_CONCLUSIONS[results],
            started=_epoch(build, "started_at"),
            failed_step=_failed_step(build.get("steps")),
            failure_reason=None if results in PASSED_RESULTS else _reason(build, results),
        )

    def build_of_request(self, job: JobRef) -> dict[str, Any] | None:
        """The newest build of a rerun's request, with the worker that ran it (for the audit log)."""
        request = job.id.partition(":")[2]
        builds = self._get(
            "builds", {"buildrequestid": request, "order": "-buildid", "property": "workername"}, job.id
        )["builds"]
        return builds[0] if builds else None

    # -- HTTP -----------------------------------------------------------------------------------------

    def _get(self, path: str, params: dict[str, Any], what: str) -> dict[str, Any]:
        body: dict[str, Any] = self.http.json("GET", path, what, params=params)
        return body

    def _rpc(self, retry: bool, path: str, method: str, params: dict[str, Any], what: str) -> Any:
        # A rebuild is not idempotent: a 5xx after the master queued it must not queue a second one.
        payload = {"jsonrpc": "2.0", "method": method, "params": params, "id": 1}
        body = self.http.json("POST", path, what, json=payload, retry=retry)
        if "error" in body:
            status = self.http.last.status if self.http.last else None
            raise ProviderRejected(NAME, f"{method} {what}: {body['error']}", status)
        return body.get("result")


def _object(build: dict[str, Any], key: str) -> dict[str, Any]:
    found = build.get(key)
    return found if isinstance(found, dict) else {}


def _property(build: dict[str, Any], name: str) -> str | None:
    # Properties come as {"name": [value, source]}.
    found = (build.get("properties") or {}).get(name)
    if isinstance(found, list | tuple) and found and isinstance(found[0], str) and found[0]:
        return found[0]
    return None


def _epoch(build: dict[str, Any], key: str) -> datetime | None:
    value = build.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PayloadInvalid(f"{key} {value!r} is not epoch seconds")
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError) as error:
        raise PayloadInvalid(f"{key} {value!r} is out of range") from error


def _failed_step(steps: Any) -> str | None:
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict) and step.get("results") in FAILED_STEP_RESULTS and step.get("name"):
            return str(step["name"])
    return None


def _reason(build: dict[str, Any], results: int) -> str:
    """Buildbot's own words for the build (`state_string`, e.g. "failed test"), else the result's name."""
    said = build.get("state_string")
    return said if isinstance(said, str) and said else RESULT_NAMES[results]
