"""A fake GitLab: the runner and job endpoints of REST API v4, jobs that run on unpaused runners whose
tags cover the job's, and Job Hook webhooks carrying the secret token.

Built from GitLab's published docs (gitlab-org/gitlab, read through the GitHub mirror
`pavankalisetti009/gitlab`), not from our client:

- `doc/api/runners.md` @ 01c8052d16738da81218ec34c10b1e3272547f65: `GET /runners/:id` (the runner
  object with `paused`, `active`, `status`, `tag_list`, `maintenance_note`), `PUT /runners/:id`
  (form fields `paused`, `maintenance_note` ≤ 1024 characters, …), `GET /runners/:id/jobs?status=`.
- `doc/api/jobs.md` @ 088457c0fe133e6bf1c3f347316811328ffe5f14: `GET /projects/:id/jobs/:job_id`,
  `POST /projects/:id/jobs/:job_id/retry` answering the new job (201, as gitlab4j expects).
- `doc/user/project/integrations/webhook_events.md` @ 3c3341b9d5c82489f3f75a05f78954cf73773f62 ("Job
  events") and `webhooks.md` @ 264d0e9ac612db7d99f8dd4ee3c971c41e628d48 (delivery headers
  `X-Gitlab-Event`, `X-Gitlab-Token`, `X-Gitlab-Event-UUID`, `Idempotency-Key`); the payload template is
  tests/fixtures/providers/gitlab/job_hook.docs.json.

Choices the docs leave open (docs/providers.md says so): retrying a job that has not finished is
refused with 403 "Job is not retryable"; rate limiting answers 429 with Retry-After and RateLimit-*.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.fakes.webhook_server import FakeServer, Reply, Request

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers" / "gitlab"
FINISHED = ("success", "failed", "canceled", "skipped")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class Runner:
    id: int
    description: str
    tags: list[str]
    paused: bool = False
    maintenance_note: str | None = None
    status: str = "online"

    def json(self) -> dict[str, Any]:
        return {
            "active": not self.paused,
            "paused": self.paused,
            "architecture": None,
            "description": self.description,
            "id": self.id,
            "ip_address": "",
            "is_shared": False,
            "runner_type": "project_type",
            "contacted_at": _now(),
            "maintenance_note": self.maintenance_note,
            "name": "gitlab-runner",
            "online": self.status == "online",
            "status": self.status,
            "platform": None,
            "projects": [],
            "revision": None,
            "tag_list": list(self.tags),
            "version": None,
            "access_level": "not_protected",
            "maximum_timeout": 3600,
        }


@dataclass
class Job:
    id: int
    project_id: int
    pipeline_id: int
    name: str
    tags: list[str]
    retries_count: int = 0
    status: str = "pending"
    runner: Runner | None = None
    pin: str | None = None
    created_at: str = field(default_factory=_now)
    started_at: str | None = None
    finished_at: str | None = None
    done_at: float = 0.0


class FakeGitLab(FakeServer):
    def __init__(
        self,
        token: str,
        webhook_secret: str,
        webhook_url: str | None = None,
        project_id: int = 380,
        job_seconds: float = 0.05,
    ) -> None:
        super().__init__()
        self.token, self.secret = token, webhook_secret
        self.webhook_url = webhook_url
        self.project_id = project_id
        self.job_seconds = job_seconds
        self.runners: dict[int, Runner] = {}
        self.jobs: dict[int, Job] = {}
        self.fails_on: set[str] = set()  # runner descriptions whose jobs fail (the sick ones)
        self.limited = 0  # the next this-many API calls answer 429
        self.retry_after = "1"
        self._ids = itertools.count(1977)
        self._pipelines = itertools.count(2366)
        self._announce: list[Job] = []
        self._template = json.loads((FIXTURES / "job_hook.docs.json").read_text())
        self.route("GET", r"/api/v4/runners/(?P<id>\d+)", self._get_runner)
        self.route("PUT", r"/api/v4/runners/(?P<id>\d+)", self._put_runner)
        self.route("GET", r"/api/v4/runners/(?P<id>\d+)/jobs", self._runner_jobs)
        self.route("GET", r"/api/v4/projects/(?P<p>\d+)/jobs/(?P<id>\d+)", self._get_job)
        self.route("POST", r"/api/v4/projects/(?P<p>\d+)/jobs/(?P<id>\d+)/retry", self._retry)

    # -- the world a test sets up ---------------------------------------------------------------------

    def add_runner(self, runner_id: int, description: str, tags: list[str]) -> Runner:
        with self.lock:
            runner = Runner(id=runner_id, description=description, tags=list(tags))
            self.runners[runner.id] = runner
            return runner

    def queue(self, name: str, tags: list[str], pin: str | None = None) -> Job:
        with self.lock:
            job = Job(next(self._ids), self.project_id, next(self._pipelines), name, list(tags), pin=pin)
            self.jobs[job.id] = job
        self._deliver(job)
        return job

    def job_id(self, job: Job) -> str:
        return f"{job.project_id}/{job.id}"

    # -- running jobs ---------------------------------------------------------------------------------

    def _can_take(self, runner: Runner, job: Job) -> bool:
        busy = any(j.runner is runner and j.status == "running" for j in self.jobs.values())
        return (
            runner.status == "online" and not runner.paused and not busy and set(job.tags) <= set(runner.tags)
        )

    def tick(self) -> None:
        events: list[Job] = []
        with self.lock:
            events += self._announce
            self._announce.clear()
            now = time.monotonic()
            for job in self.jobs.values():
                if job.status == "running" and now >= job.done_at and job.runner is not None:
                    job.status = "failed" if job.runner.description in self.fails_on else "success"
                    job.finished_at = _now()
                    events.append(job)
            for job in self.jobs.values():
                if job.status != "pending":
                    continue
                eligible = [r for r in self.runners.values() if self._can_take(r, job)]
                if job.pin is not None:
                    eligible = [r for r in eligible if r.description == job.pin]
                if eligible:
                    # The newest runner first: a pause that did not take would show as a job landing there.
                    job.runner, job.status, job.started_at = eligible[-1], "running", _now()
                    job.done_at = now + self.job_seconds
                    events.append(job)
            snapshots = [(job, self.payload(job)) for job in events]
        for _job, body in snapshots:
            self._send(body)

    def wait_idle(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if all(j.status in FINISHED for j in self.jobs.values()):
                    return
            time.sleep(0.02)
        raise AssertionError("fake GitLab: jobs still pending or running")

    # -- webhooks -------------------------------------------------------------------------------------

    def payload(self, job: Job) -> bytes:
        with self.lock:
            body = copy.deepcopy(self._template)
            runner = job.runner
            body |= {
                "retries_count": job.retries_count,
                "build_id": job.id,
                "build_name": job.name,
                "build_status": job.status,
                "build_created_at": job.created_at,
                "build_started_at": job.started_at,
                "build_finished_at": job.finished_at,
                "build_created_at_iso": job.created_at[:19] + "Z",
                "build_started_at_iso": job.started_at[:19] + "Z" if job.started_at else None,
                "build_finished_at_iso": job.finished_at[:19] + "Z" if job.finished_at else None,
                "build_failure_reason": "script_failure" if job.status == "failed" else "unknown_failure",
                "pipeline_id": job.pipeline_id,
                "project_id": job.project_id,
                "runner": None
                if runner is None
                else {
                    "id": runner.id,
                    "description": runner.description,
                    "runner_type": "project_type",
                    "active": not runner.paused,
                    "is_shared": False,
                    "tags": list(runner.tags),
                },
            }
            body["commit"]["id"] = job.pipeline_id
        return json.dumps(body).encode()

    def headers(self, token: str | None = None, event: str = "Job Hook") -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitLab/17.6.0",
            "X-Gitlab-Event": event,
            "X-Gitlab-Instance": "https://gitlab.example.com",
            "X-Gitlab-Webhook-UUID": "02affd2d-2cba-4033-917d-ec22d5dc4b38",
            "X-Gitlab-Event-UUID": str(uuid.uuid4()),
            "Idempotency-Key": str(uuid.uuid4()),
        }
        if token is not None or self.secret:
            headers["X-Gitlab-Token"] = self.secret if token is None else token
        return headers

    def _deliver(self, job: Job) -> None:
        self._send(self.payload(job))

    def _send(self, body: bytes) -> None:
        if self.webhook_url is not None:
            self.send_webhook(self.webhook_url, "Job Hook", self.headers(), body)

    # -- the REST API ---------------------------------------------------------------------------------

    def dispatch(self, request: Request) -> Reply:
        if request.headers.get("private-token") != self.token:
            with self.lock:
                self.requests.append(request)
            return Reply(401, {"message": "401 Unauthorized"})
        with self.lock:
            if self.limited > 0:
                self.limited -= 1
                self.requests.append(request)
                return Reply(
                    429,
                    {"message": "Retry later"},
                    {
                        "Retry-After": self.retry_after,
                        "RateLimit-Limit": "600",
                        "RateLimit-Observed": "601",
                        "RateLimit-Remaining": "0",
                        "RateLimit-Reset": str(int(time.time()) + 1),
                    },
                )
        return super().dispatch(request)

    def _get_runner(self, request: Request, match: re.Match[str]) -> Reply:
        runner = self.runners.get(int(match["id"]))
        return Reply(200, runner.json()) if runner else Reply(404, {"message": "404 Runner Not Found"})

    def _put_runner(self, request: Request, match: re.Match[str]) -> Reply:
        runner = self.runners.get(int(match["id"]))
        if runner is None:
            return Reply(404, {"message": "404 Runner Not Found"})
        form = request.form()
        note = form.get("maintenance_note")
        if note is not None and len(str(note)) > 1024:
            return Reply(400, {"message": {"maintenance_note": ["is too long (maximum is 1024 characters)"]}})
        if "paused" in form:
            runner.paused = str(form["paused"]).lower() == "true"
        if "active" in form:
            runner.paused = str(form["active"]).lower() != "true"
        if note is not None:
            runner.maintenance_note = str(note) or None
        return Reply(200, runner.json())

    def _runner_jobs(self, request: Request, match: re.Match[str]) -> Reply:
        runner = self.runners.get(int(match["id"]))
        if runner is None:
            return Reply(404, {"message": "404 Runner Not Found"})
        status = request.query.get("status")
        found = [
            self.job_json(j)
            for j in sorted(self.jobs.values(), key=lambda j: -j.id)
            if j.runner is runner and status in (None, j.status)
        ]
        per_page = int(request.query.get("per_page", 20))
        return Reply(200, found[:per_page])

    def job_json(self, job: Job) -> dict[str, Any]:
        return {
            "id": job.id,
            "name": job.name,
            "stage": "test",
            "status": job.status,
            "ref": "main",
            "tag": False,
            "created_at": job.created_at,
            "started_at": job.started_at,
            "finished_at": job.finished_at,
            "pipeline": {
                "id": job.pipeline_id,
                "project_id": job.project_id,
                "ref": "main",
                "status": job.status,
            },
            "project": {"ci_job_token_scope_enabled": False},
            "runner": None
            if job.runner is None
            else {"id": job.runner.id, "description": job.runner.description},
            "runner_manager": None,
            "tag_list": list(job.tags),
            "web_url": f"https://gitlab.example.com/p/-/jobs/{job.id}",
            "user": None,
        }

    def _get_job(self, request: Request, match: re.Match[str]) -> Reply:
        job = self.jobs.get(int(match["id"]))
        if job is None or job.project_id != int(match["p"]):
            return Reply(404, {"message": "404 Job Not Found"})
        return Reply(200, self.job_json(job))

    def _retry(self, request: Request, match: re.Match[str]) -> Reply:
        job = self.jobs.get(int(match["id"]))
        if job is None or job.project_id != int(match["p"]):
            return Reply(404, {"message": "404 Job Not Found"})
        if job.status not in FINISHED:
            return Reply(403, {"message": "403 Forbidden  - Job is not retryable"})
        again = Job(
            next(self._ids), job.project_id, job.pipeline_id, job.name, job.tags, job.retries_count + 1
        )
        self.jobs[again.id] = again
        self._announce.append(again)
        return Reply(201, self.job_json(again))
