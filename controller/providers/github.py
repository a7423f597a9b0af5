"""GitHub Actions self-hosted runners: `workflow_job` webhooks in; label cordon and job rerun out.

Names, as the controller sees them (docs/providers.md):

- runner id = the runner's **name** (unique within a repository's or organisation's runners); the
  numeric id GitHub uses in URLs is looked up by name on every call.
- job id = `<owner>/<repo>/<workflow job id>` (job ids are only meaningful with their repository).
- a rerun we asked for = `<owner>/<repo>/runs/<run id>/attempts/<n>/<job name>`: the rerun call answers
  201 with no body, and GitHub runs the job again as attempt n = the run's attempt + 1 under a new job
  id. A `workflow_job` delivery names that attempt by (run_id, run_attempt, name), so each event carries
  the attempt id in `JobEvent.rerun_ids` and settles the rerun when it completes.

GitHub has no pause (github/rest-api-description, descriptions/api.github.com/api.github.com.2022-11-28
.yaml: no runner path pauses or disables). A cordon therefore removes the runner's *custom* labels (PUT
…/labels with `[]`), remembering them in the database and putting exactly them back on uncordon. That
stops only jobs whose `runs-on` needs a custom label; read-only labels (self-hosted, OS, architecture)
cannot be removed, so the runner's agent gets a cordon directive too (docs/providers.md).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import requests

from common.auth import hmac_sha256_hex, same_secret
from common.identity import RunnerIdentity
from common.jobs import JobConclusion
from controller.errors import ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.providers.base import (
    JobEvent,
    JobRef,
    JobState,
    Outcome,
    PayloadInvalid,
    RunnerState,
    WebhookRejected,
)
from controller.providers.http import ProviderHttp, retry_after
from controller.providers.memory import RunnerMemory

NAME = "github"
API_VERSION = "2022-11-28"
SIGNATURE_HEADER = "x-hub-signature-256"
# Neither docs nor schema promise when a secondary limit without Retry-After lifts: "wait at least one
# minute" (github/docs, content/rest/using-the-rest-api/rate-limits-for-the-rest-api.md).
SECONDARY_LIMIT_WAIT_S = 60.0
_STATES: dict[str, JobState] = {"queued": "queued", "waiting": "queued", "in_progress": "running"}
_CONCLUSIONS: dict[str, JobState] = {
    "success": "passed",
    "neutral": "passed",
    "failure": "failed",
    "timed_out": "failed",
}
# workflow_job.conclusion as a job record's; `skipped` (ran nowhere), `action_required` and `stale` are
# not outcomes of a run on a runner. GitHub names no infrastructure failure: a lost runner is `failure`.
_RECORD_CONCLUSIONS = {
    "success": JobConclusion.success,
    "neutral": JobConclusion.success,
    "failure": JobConclusion.failure,
    "timed_out": JobConclusion.timed_out,
    "cancelled": JobConclusion.cancelled,
}
_FAILED_STEP = ("failure", "timed_out")


class GitHubProvider:
    NAME = NAME
    REMEMBERS = True  # build_providers hands it a RunnerMemory: the labels a cordon took off
    CORDON_LIMITS = (
        "GitHub has no pause: the cordon took the runner's custom labels off (they come back on uncordon); "
        "jobs whose runs-on names only read-only labels (self-hosted, OS, arch) can still land on it "
        "unless its agent's on_cordon command stops the runner"
    )

    def __init__(
        self,
        token: str,
        webhook_secret: str,
        owner: str,
        repo: str,
        api_url: str = "https://api.github.com",
        timeout_s: float = 10.0,
        memory: RunnerMemory | None = None,
    ) -> None:
        for key, value in (("token", token), ("webhook_secret", webhook_secret), ("owner", owner)):
            if not value:
                raise ValueError(f"provider github: `{key}` is required")
        if not repo:
            raise ValueError("provider github: `repo` is required (the repository whose runners to manage)")
        if memory is None:
            raise ValueError("provider github: needs the controller's database to remember removed labels")
        self.owner, self.repo = owner, repo
        self.memory = memory
        self._secret = webhook_secret.encode()
        self.http = ProviderHttp(
            NAME,
            api_url,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
            },
            timeout_s=timeout_s,
        )

    def __repr__(self) -> str:  # never the token or the secret
        return f"GitHubProvider({self.http.base!r}, {self.owner}/{self.repo})"

    # -- Provider -------------------------------------------------------------------------------------

    def cordon(self, runner: str, reason: str) -> None:
        found = self._runner(runner)
        custom = _custom_labels(found)
        held = self.memory.get(runner)
        # Remember before removing: a crash in between leaves the labels known, never lost.
        kept = list(held["labels"]) if held else []
        kept += [label for label in custom if label not in kept]
        self.memory.put(runner, {"runner_id": found["id"], "labels": kept, "reason": reason})
        if custom:
            self._send("PUT", f"{self._runners}/{found['id']}/labels", runner, json={"labels": []})

    def uncordon(self, runner: str) -> None:
        held = self.memory.get(runner)
        if held is None:
            return  # nothing of ours to put back
        found = self._runner(runner)
        current = _custom_labels(found)
        wanted = list(held["labels"]) + [label for label in current if label not in held["labels"]]
        if set(wanted) != set(current):
            self._send("PUT", f"{self._runners}/{found['id']}/labels", runner, json={"labels": wanted})
        self.memory.forget(runner)

    def state(self, runner: str) -> RunnerState:
        found = self._runner(runner)
        held = self.memory.get(runner)
        # Cordoned while none of the labels we took off is back (someone may have re-added them by hand).
        cordoned = held is not None and not set(held["labels"]) & set(_custom_labels(found))
        return RunnerState(
            online=found.get("status") == "online",
            busy=bool(found.get("busy")),
            cordoned=cordoned,
            cordoned_by="runnerctl" if cordoned else None,
            reason=held.get("reason") if cordoned and held else None,
        )

    def rerun(self, job: JobRef) -> JobRef:
        repo, job_id = _split_job_id(job.id)
        found = self._json("GET", f"repos/{repo}/actions/jobs/{job_id}", f"job {job.id}")
        # Not retried: a 5xx after GitHub queued the attempt must not queue another one.
        self._send("POST", f"repos/{repo}/actions/jobs/{job_id}/rerun", f"job {job.id}", retry=False)
        # GitHub only reruns a job of the run's latest attempt (403 otherwise), so the new one is next.
        attempt = int(found["run_attempt"]) + 1
        return JobRef(attempt_id(repo, found["run_id"], attempt, found["name"]), run_id=str(found["run_id"]))

    def job_outcome(self, job: JobRef) -> Outcome:
        parsed = _split_attempt_id(job.id)
        if parsed is None:
            repo, job_id = _split_job_id(job.id)
            return _outcome(self._json("GET", f"repos/{repo}/actions/jobs/{job_id}", f"job {job.id}"))
        repo, run_id, attempt, name = parsed
        listing = self._json(
            "GET",
            f"repos/{repo}/actions/runs/{run_id}/attempts/{attempt}/jobs",
            f"run {run_id} attempt {attempt}",
            params={"per_page": 100},
        )
        for found in listing.get("jobs") or []:
            if found.get("name") == name:
                return _outcome(found)
        return "pending"  # the attempt exists but has not listed the job yet

    # -- WebhookReceiver ------------------------------------------------------------------------------

    def verify(self, headers: Mapping[str, str], body: bytes, now_s: float) -> None:
        sent = headers.get(SIGNATURE_HEADER)
        if not sent:
            raise WebhookRejected("no X-Hub-Signature-256 header: give the webhook a secret")
        if not same_secret(signature(self._secret, body), sent):
            raise WebhookRejected("X-Hub-Signature-256 does not match the body: check the webhook secret")

    def delivery_id(self, headers: Mapping[str, str], body: bytes) -> str | None:
        return headers.get("x-github-delivery") or None

    def job_events(self, headers: Mapping[str, str], body: bytes) -> list[JobEvent] | None:
        if headers.get("x-github-event") != "workflow_job":
            return None  # ping, push, workflow_run, …: not ours
        try:
            payload = json.loads(body)
            job = payload["workflow_job"]
            repo = payload["repository"]["full_name"]
            job_id, run_id, attempt = int(job["id"]), int(job["run_id"]), int(job["run_attempt"])
            name, status = str(job["name"]), str(job["status"])
        except (ValueError, KeyError, TypeError) as error:
            raise PayloadInvalid(f"not a workflow_job delivery: {type(error).__name__} {error}") from error
        if status == "completed":
            state = _CONCLUSIONS.get(str(job.get("conclusion")), "cancelled")
        elif status in _STATES:
            state = _STATES[status]
        else:
            raise PayloadInvalid(
                f"workflow_job.status {status!r} is none of queued, waiting, in_progress, completed"
            )
        runner_name = job.get("runner_name")
        runner = RunnerIdentity(id=runner_name, name=runner_name, provider=NAME) if runner_name else None
        done = status == "completed"
        return [
            JobEvent(
                job=JobRef(f"{repo}/{job_id}", run_id=f"{repo}/{run_id}"),
                name=name,
                state=state,
                time=_when(job),
                runner=runner,
                attempt=attempt,
                rerun_ids=(attempt_id(repo, run_id, attempt, name),) if attempt > 1 else (),
                conclusion=_RECORD_CONCLUSIONS.get(str(job.get("conclusion"))) if done else None,
                started=_timestamp(job, "started_at") if done else None,
                failed_step=_failed_step(job) if done else None,
            )
        ]

    # -- HTTP -----------------------------------------------------------------------------------------

    @property
    def _runners(self) -> str:
        return f"repos/{self.owner}/{self.repo}/actions/runners"

    def _runner(self, name: str) -> dict[str, Any]:
        listing = self._json("GET", self._runners, f"runner {name}", params={"name": name})
        for found in listing.get("runners") or []:
            if found.get("name") == name:
                return dict(found)
        raise RunnerNotFound(NAME, f"no self-hosted runner named {name!r} in {self.owner}/{self.repo}")

    def _json(self, method: str, path: str, what: str, **kwargs: Any) -> dict[str, Any]:
        response = self._send(method, path, what, **kwargs)
        try:
            found: dict[str, Any] = response.json()
        except ValueError as error:
            raise ProviderRejected(NAME, f"{method} {path}: not JSON", response.status_code) from error
        return found

    def _send(self, method: str, path: str, what: str, **kwargs: Any) -> requests.Response:
        response = self.http.send(method, path, what, ok=(403, 429), **kwargs)
        if response.status_code not in (403, 429):
            return response
        wait = rate_limit_wait(response, time.time())
        if wait is not None:
            raise ProviderUnavailable(
                NAME, f"{method} {path}: rate limited (HTTP {response.status_code})", retry_after=wait
            )
        raise ProviderRejected(
            NAME,
            f"{method} {path}: HTTP {response.status_code}: {_message(response)} "
            "(check the token's scopes: repo, or fine-grained Administration: write)",
            response.status_code,
        )


def signature(secret: bytes, body: bytes) -> str:
    """The X-Hub-Signature-256 value GitHub sends for `body` (github/docs,
    content/webhooks/using-webhooks/validating-webhook-deliveries.md)."""
    return "sha256=" + hmac_sha256_hex(secret, body)


def rate_limit_wait(response: requests.Response, now_s: float) -> float | None:
    """Seconds to wait when a 403/429 is a rate limit (primary: x-ratelimit-remaining 0 until
    x-ratelimit-reset; secondary: Retry-After, or a minute), None when it is a real refusal."""
    headers = response.headers
    if headers.get("x-ratelimit-remaining") == "0":
        try:
            return max(0.0, float(headers.get("x-ratelimit-reset", "")) - now_s)
        except ValueError:
            return SECONDARY_LIMIT_WAIT_S
    after = retry_after(response)
    if after is not None:
        return after
    if response.status_code == 429 or "secondary rate limit" in _message(response).lower():
        return SECONDARY_LIMIT_WAIT_S
    return None


def attempt_id(repo: str, run_id: int | str, attempt: int, name: str) -> str:
    return f"{repo}/runs/{run_id}/attempts/{attempt}/{name}"


def _split_job_id(job_id: str) -> tuple[str, str]:
    owner, _, rest = job_id.partition("/")
    repo, _, number = rest.partition("/")
    if not (owner and repo and number.isdigit()):
        raise ProviderRejected(NAME, f"job id {job_id!r} is not <owner>/<repo>/<workflow job id>")
    return f"{owner}/{repo}", number


def _split_attempt_id(job_id: str) -> tuple[str, str, str, str] | None:
    parts = job_id.split("/", 6)
    if len(parts) != 7 or parts[2] != "runs" or parts[4] != "attempts":
        return None
    owner, repo, _runs, run_id, _attempts, attempt, name = parts
    return f"{owner}/{repo}", run_id, attempt, name


def _custom_labels(runner: Mapping[str, Any]) -> list[str]:
    return [str(label["name"]) for label in runner.get("labels") or [] if label.get("type") == "custom"]


def _outcome(job: Mapping[str, Any]) -> Outcome:
    if job.get("status") != "completed":
        return "pending"
    return "passed" if _CONCLUSIONS.get(str(job.get("conclusion"))) == "passed" else "failed"


def _when(job: Mapping[str, Any]) -> datetime:
    for key in ("completed_at", "started_at", "created_at"):
        found = _timestamp(job, key)
        if found is not None:
            return found
    return datetime.now(UTC)


def _timestamp(job: Mapping[str, Any], key: str) -> datetime | None:
    value = job.get(key)
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as error:
        raise PayloadInvalid(f"workflow_job.{key} {value!r} is not a timestamp") from error


def _failed_step(job: Mapping[str, Any]) -> str | None:
    """The first step that failed; the steps after it are skipped or cancelled because of it."""
    steps = job.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict) and step.get("conclusion") in _FAILED_STEP and step.get("name"):
            return str(step["name"])
    return None


def _message(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    return str(body.get("message", body))[:300] if isinstance(body, dict) else str(body)[:300]
