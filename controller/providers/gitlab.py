"""GitLab CI runners: Job Hook webhooks in; pause and job retry out (REST API v4).

Names, as the controller sees them (docs/providers.md):

- runner id = GitLab's numeric runner id, as text (`"12270837"`): descriptions are free text and need
  not be unique, ids are what every runner endpoint takes. The description becomes the runner's name.
- job id = `<project id>/<job id>`: a retry needs the project (`POST /projects/:id/jobs/:job_id/retry`),
  and the retry answers with the new job, whose own id names the rerun.

A cordon is `PUT /runners/:id` with `paused=true` (runners.md, "Pause a runner"): no new jobs, the
current one finishes. The reason goes into the runner's `maintenance_note`, ahead of any note already
there, so a pause is visible in GitLab and the controller can tell its own pause from a person's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from common.auth import same_secret
from common.identity import RunnerIdentity
from common.jobs import JobConclusion
from controller.errors import ProviderRejected, RunnerNotFound
from controller.providers.base import (
    JobEvent,
    JobRef,
    JobState,
    Outcome,
    PayloadInvalid,
    RunnerState,
    WebhookRejected,
)
from controller.providers.http import ProviderHttp

NAME = "gitlab"
# What remediation writes ahead of its reasons (controller.remediation.actions.MARK): our note, not a person's.
MARK = "runnerctl:"
MAX_NOTE = 1024  # runners.md: maintenance_note "(1024 characters)"
_STATES: dict[str, JobState] = {
    "success": "passed",
    "failed": "failed",
    "canceled": "cancelled",
    "skipped": "cancelled",
    "running": "running",
}
# build_failure_reason values (GitLab's Enums::Ci::CommitStatus.failure_reasons) that are not the
# job's script: the runner's own failure, and the job's time running out.
_SYSTEM_REASONS = frozenset({"runner_system_failure"})
_TIMEOUT_REASONS = frozenset({"stuck_or_timeout_failure", "job_execution_timeout"})
_DONE: dict[str, Outcome] = {
    "success": "passed",
    "failed": "failed",
    "canceled": "failed",
    "skipped": "failed",
}


class GitLabProvider:
    NAME = NAME
    CORDON_LIMITS = (
        "paused in GitLab (paused=true): no new jobs, the current one finishes; "
        "a runner with several managers (hosts) is paused on all of them"
    )

    def __init__(
        self,
        token: str,
        webhook_secret: str,
        api_url: str = "https://gitlab.com/api/v4",
        timeout_s: float = 10.0,
    ) -> None:
        for key, value in (("token", token), ("webhook_secret", webhook_secret)):
            if not value:
                raise ValueError(f"provider gitlab: `{key}` is required")
        self._secret = webhook_secret.encode()
        self.http = ProviderHttp(NAME, api_url, headers={"PRIVATE-TOKEN": token}, timeout_s=timeout_s)

    def __repr__(self) -> str:  # never the token or the secret
        return f"GitLabProvider({self.http.base!r})"

    # -- Provider -------------------------------------------------------------------------------------

    def cordon(self, runner: str, reason: str) -> None:
        number = _runner_number(runner)
        found = self._get(f"runners/{number}", f"runner {runner}")
        note = " ".join(reason.split())
        before = found.get("maintenance_note") or ""
        if before and not before.startswith(note):
            note = f"{note}\n{before}"
        self.http.send(
            "PUT",
            f"runners/{number}",
            f"runner {runner}",
            data={"paused": "true", "maintenance_note": note[:MAX_NOTE]},
        )

    def uncordon(self, runner: str) -> None:
        number = _runner_number(runner)
        found = self._get(f"runners/{number}", f"runner {runner}")
        form = {"paused": "false"}
        note = found.get("maintenance_note") or ""
        if note.startswith(MARK):
            form["maintenance_note"] = note.partition("\n")[2]  # the note a person wrote before, if any
        self.http.send("PUT", f"runners/{number}", f"runner {runner}", data=form)

    def state(self, runner: str) -> RunnerState:
        number = _runner_number(runner)
        found = self._get(f"runners/{number}", f"runner {runner}")
        running = self.http.json(
            "GET", f"runners/{number}/jobs", f"runner {runner}", params={"status": "running", "per_page": 1}
        )
        # `active` is the deprecated inverse of `paused` (runners.md); older servers send only it.
        paused = bool(found["paused"]) if "paused" in found else not found.get("active", True)
        return RunnerState(
            online=found.get("status") == "online",
            busy=bool(running),
            cordoned=paused,
            cordoned_by="gitlab" if paused else None,
            reason=(found.get("maintenance_note") or None) if paused else None,
        )

    def rerun(self, job: JobRef) -> JobRef:
        project, number = _split_job_id(job.id)
        # Not retried: a 5xx after GitLab created the new job must not create another one.
        new = self.http.json("POST", f"projects/{project}/jobs/{number}/retry", f"job {job.id}", retry=False)
        try:
            pipeline = (new.get("pipeline") or {}).get("id")
            return JobRef(f"{project}/{int(new['id'])}", run_id=str(pipeline) if pipeline else job.run_id)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            raise ProviderRejected(NAME, f"retry of job {job.id}: unexpected answer {new!r}") from error

    def job_outcome(self, job: JobRef) -> Outcome:
        project, number = _split_job_id(job.id)
        found = self._get(f"projects/{project}/jobs/{number}", f"job {job.id}")
        return _DONE.get(str(found.get("status")), "pending")

    # -- WebhookReceiver ------------------------------------------------------------------------------

    def verify(self, headers: Mapping[str, str], body: bytes, now_s: float) -> None:
        sent = headers.get("x-gitlab-token")
        if not sent:
            raise WebhookRejected("no X-Gitlab-Token header: give the webhook a secret token")
        if not same_secret(sent, self._secret):
            raise WebhookRejected("X-Gitlab-Token is not the configured webhook secret")

    def delivery_id(self, headers: Mapping[str, str], body: bytes) -> str | None:
        # Idempotency-Key (17.4+) stays the same across GitLab's retries; older servers send only the
        # event UUID, which is as good for job events (they are never recursive).
        return headers.get("idempotency-key") or headers.get("x-gitlab-event-uuid") or None

    def job_events(self, headers: Mapping[str, str], body: bytes) -> list[JobEvent] | None:
        if headers.get("x-gitlab-event") != "Job Hook":
            return None
        try:
            payload = json.loads(body)
            if payload.get("object_kind") != "build":
                raise ValueError(f"object_kind {payload.get('object_kind')!r}, expected 'build'")
            project, number = int(payload["project_id"]), int(payload["build_id"])
            status, name = str(payload["build_status"]), str(payload["build_name"])
            pipeline = payload.get("pipeline_id")
            retries = payload.get("retries_count")
            runner = _runner_identity(payload.get("runner"))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise PayloadInvalid(f"not a Job Hook body: {type(error).__name__} {error}") from error
        conclusion, reason = _conclusion(status, payload.get("build_failure_reason"))
        return [
            JobEvent(
                job=JobRef(f"{project}/{number}", run_id=f"{project}/{pipeline}" if pipeline else None),
                name=name,
                state=_STATES.get(status, "queued"),  # created, pending, manual, scheduled, …
                time=_when(payload),
                runner=runner,
                attempt=int(retries) + 1 if isinstance(retries, int) else None,
                conclusion=conclusion,
                started=_started(payload) if conclusion else None,
                failure_reason=reason,
            )
        ]

    # -- HTTP -----------------------------------------------------------------------------------------

    def _get(self, path: str, what: str) -> dict[str, Any]:
        found = self.http.json("GET", path, what)
        if not isinstance(found, dict):
            raise ProviderRejected(NAME, f"GET {path}: expected an object, got {type(found).__name__}")
        return found


def _runner_number(runner: str) -> str:
    if not runner.isdigit():
        raise RunnerNotFound(
            NAME, f"runner id {runner!r} is not a GitLab runner id (a number, e.g. 12270837)"
        )
    return runner


def _split_job_id(job_id: str) -> tuple[str, str]:
    project, _, number = job_id.partition("/")
    if not (project.isdigit() and number.isdigit()):
        raise ProviderRejected(NAME, f"job id {job_id!r} is not <project id>/<job id>")
    return project, number


def _runner_identity(runner: Any) -> RunnerIdentity | None:
    if runner is None:
        return None  # still waiting for one
    tags = tuple(str(tag) for tag in runner.get("tags") or ())[:100]
    return RunnerIdentity(
        id=str(int(runner["id"])), name=runner.get("description") or None, labels=tags, provider=NAME
    )


def _conclusion(status: str, reason: Any) -> tuple[JobConclusion | None, str | None]:
    """A finished job's conclusion and GitLab's reason for a failure. Every hook carries a
    `build_failure_reason`, `unknown_failure` even for a job that passed: it counts only on failure."""
    if status == "success":
        return JobConclusion.success, None
    if status == "canceled":
        return JobConclusion.cancelled, None
    if status != "failed":
        return None, None  # not finished, or skipped (ran nowhere)
    said = str(reason) if isinstance(reason, str) and reason else None
    if said in _SYSTEM_REASONS:
        return JobConclusion.system_failure, said
    if said in _TIMEOUT_REASONS:
        return JobConclusion.timed_out, said
    return JobConclusion.failure, said


def _started(payload: Mapping[str, Any]) -> datetime | None:
    for value in (payload.get("build_started_at_iso"), payload.get("build_started_at")):
        if isinstance(value, str) and value:
            return _timestamp("build_started_at", value)
    return None


def _when(payload: Mapping[str, Any]) -> datetime:
    # The docs' example uses ISO 8601 (and `_iso` twins); GitLab.com sends "2023-01-10 13:50:02 UTC".
    for key in ("build_finished_at", "build_started_at", "build_created_at"):
        for value in (payload.get(f"{key}_iso"), payload.get(key)):
            if isinstance(value, str) and value:
                return _timestamp(key, value)
    return datetime.now(UTC)


def _timestamp(key: str, value: str) -> datetime:
    text = value.replace(" UTC", "+00:00").replace("Z", "+00:00")
    try:
        found = datetime.fromisoformat(text)
    except ValueError as error:
        raise PayloadInvalid(f"{key} {value!r} is not a timestamp") from error
    return found if found.tzinfo else found.replace(tzinfo=UTC)
