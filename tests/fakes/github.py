"""A fake GitHub: the self-hosted runner, label and workflow-job endpoints of the REST API, jobs that run
on runners whose labels match, and signed `workflow_job` webhooks.

Built from GitHub's published descriptions, not from our client:

- REST: `github/rest-api-description`, `descriptions/api.github.com/api.github.com.2022-11-28.yaml`
  (runner list `?name=`, runner labels GET/PUT/POST/DELETE → 200 `{total_count, labels}`, DELETE runner
  → 204 or 422 while busy, job rerun → 201 `{}` or 403, jobs of a run attempt → `{total_count, jobs}`).
- Rate limits: `github/docs`, `content/rest/using-the-rest-api/rate-limits-for-the-rest-api.md`
  (403/429 with `x-ratelimit-remaining: 0` and `x-ratelimit-reset`; secondary limits with `retry-after`).
- Webhooks: `octokit/webhooks`, `payload-examples/api.github.com/workflow_job/*.payload.json` (trimmed
  under tests/fixtures/providers/github) and `payload-schemas/api.github.com/common/workflow-job.schema.json`;
  signing per `github/docs`, `content/webhooks/using-webhooks/validating-webhook-deliveries.md`.

Behaviour the documents leave open and this fake chooses (documented as such in docs/providers.md):
a rerun starts attempt n+1 of the run holding only the rerun job, under a new job id; a job of an older
attempt cannot be rerun (403, as reported in community discussion #176756).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
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

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers" / "github"
DOCS = "https://docs.github.com/rest"
READ_ONLY = ("self-hosted", "Linux", "X64")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Runner:
    id: int
    name: str
    custom: list[str]
    busy: bool = False
    status: str = "online"

    def labels(self) -> list[dict[str, Any]]:
        read_only = [{"id": i + 1, "name": n, "type": "read-only"} for i, n in enumerate(READ_ONLY)]
        custom = [{"id": 100 + i, "name": n, "type": "custom"} for i, n in enumerate(self.custom)]
        return read_only + custom

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "os": "linux",
            "status": self.status,
            "busy": self.busy,
            "ephemeral": False,
            "runner_group_id": 1,
            "labels": self.labels(),
        }


@dataclass
class Job:
    id: int
    run_id: int
    run_attempt: int
    name: str
    runs_on: list[str]
    status: str = "queued"
    conclusion: str | None = None
    runner: Runner | None = None
    pin: str | None = None  # the runner it happens to land on first (a test's choice)
    created_at: str = field(default_factory=_now)
    started_at: str | None = None
    completed_at: str | None = None
    done_at: float = 0.0


class FakeGitHub(FakeServer):
    def __init__(
        self,
        owner: str,
        repo: str,
        token: str,
        webhook_secret: str,
        webhook_url: str | None = None,
        job_seconds: float = 0.05,
    ) -> None:
        super().__init__()
        self.owner, self.repo, self.token = owner, repo, token
        self.secret = webhook_secret.encode()
        self.webhook_url = webhook_url
        self.job_seconds = job_seconds
        self.runners: dict[int, Runner] = {}
        self.jobs: dict[int, Job] = {}
        self.run_attempts: dict[int, int] = {}
        self.fails_on: set[str] = set()  # runner names whose jobs fail (the sick ones)
        # "primary", "secondary" (403) or "secondary-429": the next API calls are rate limited
        self.limited: list[str] = []
        self.retry_after = "1"  # what a secondary limit's Retry-After says
        self.used = 0
        self._pending_queued: list[Job] = []  # reruns queued inside a request: announced by the next tick
        self._ids = itertools.count(4_000_000_001)
        self._runs = itertools.count(9_000_001)
        self._template = json.loads((FIXTURES / "workflow_job.completed.failure.json").read_text())
        repo_path = rf"/repos/{re.escape(owner)}/{re.escape(repo)}/actions"
        self.route("GET", repo_path + r"/runners", self._list_runners)
        self.route("GET", repo_path + r"/runners/(?P<id>\d+)", self._get_runner)
        self.route("DELETE", repo_path + r"/runners/(?P<id>\d+)", self._delete_runner)
        for method in ("GET", "PUT", "POST", "DELETE"):
            self.route(method, repo_path + r"/runners/(?P<id>\d+)/labels", self._labels)
        self.route("GET", repo_path + r"/jobs/(?P<id>\d+)", self._get_job)
        self.route("POST", repo_path + r"/jobs/(?P<id>\d+)/rerun", self._rerun)
        self.route("GET", repo_path + r"/runs/(?P<run>\d+)/attempts/(?P<n>\d+)/jobs", self._attempt_jobs)

    # -- the world a test sets up ---------------------------------------------------------------------

    def add_runner(self, name: str, labels: list[str]) -> Runner:
        with self.lock:
            runner = Runner(id=len(self.runners) + 1, name=name, custom=list(labels))
            self.runners[runner.id] = runner
            return runner

    def runner(self, name: str) -> Runner:
        with self.lock:
            return next(r for r in self.runners.values() if r.name == name)

    def queue(self, name: str, runs_on: list[str], pin: str | None = None) -> Job:
        """A workflow run with one job, queued; `pin` makes its first placement that runner."""
        with self.lock:
            run_id = next(self._runs)
            self.run_attempts[run_id] = 1
            job = Job(id=next(self._ids), run_id=run_id, run_attempt=1, name=name, runs_on=runs_on, pin=pin)
            self.jobs[job.id] = job
        self._deliver(job, "queued")
        return job

    def job_id(self, job: Job) -> str:
        return f"{self.owner}/{self.repo}/{job.id}"

    # -- running jobs ---------------------------------------------------------------------------------

    def _can_take(self, runner: Runner, job: Job) -> bool:
        have = set(READ_ONLY) | set(runner.custom)
        return runner.status == "online" and not runner.busy and set(job.runs_on) <= have

    def tick(self) -> None:
        events: list[tuple[Job, str]] = []
        with self.lock:
            events += [(job, "queued") for job in self._pending_queued]
            self._pending_queued.clear()
            now = time.monotonic()
            for job in self.jobs.values():
                if job.status == "in_progress" and now >= job.done_at and job.runner is not None:
                    job.status, job.completed_at = "completed", _now()
                    job.conclusion = "failure" if job.runner.name in self.fails_on else "success"
                    job.runner.busy = False
                    events.append((job, "completed"))
            for job in self.jobs.values():
                if job.status != "queued":
                    continue
                eligible = [r for r in self.runners.values() if self._can_take(r, job)]
                if job.pin is not None:
                    eligible = [r for r in eligible if r.name == job.pin]
                if not eligible:
                    continue
                # The newest runner first: a cordon that did not take would show as a job landing there.
                runner = eligible[-1]
                job.runner, job.status, job.started_at = runner, "in_progress", _now()
                job.done_at = now + self.job_seconds
                runner.busy = True
                events.append((job, "in_progress"))
        for job, action in events:
            self._deliver(job, action)

    def wait_idle(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if all(j.status == "completed" for j in self.jobs.values()):
                    return
            time.sleep(0.02)
        raise AssertionError("fake GitHub: jobs still queued or running")

    # -- webhooks -------------------------------------------------------------------------------------

    def job_json(self, job: Job) -> dict[str, Any]:
        base = f"https://api.github.com/repos/{self.owner}/{self.repo}"
        return {
            "id": job.id,
            "run_id": job.run_id,
            "run_url": f"{base}/actions/runs/{job.run_id}",
            "run_attempt": job.run_attempt,
            "node_id": f"CR_{job.id}",
            "head_sha": "3484a3fb816e0859fd6e1cea078d76385ff50625",
            "head_branch": "main",
            "url": f"{base}/actions/jobs/{job.id}",
            "html_url": f"https://github.com/{self.owner}/{self.repo}/actions/runs/{job.run_id}/job/{job.id}",
            "status": job.status,
            "conclusion": job.conclusion,
            "created_at": job.created_at,
            "started_at": job.started_at or job.created_at,
            "completed_at": job.completed_at,
            "name": job.name,
            "steps": [],
            "check_run_url": f"{base}/check-runs/{job.id}",
            "labels": list(job.runs_on),
            # The schema: runner fields are null while the job is queued.
            "runner_id": job.runner.id if job.runner and job.status != "queued" else None,
            "runner_name": job.runner.name if job.runner and job.status != "queued" else None,
            "runner_group_id": 1 if job.runner and job.status != "queued" else None,
            "runner_group_name": "Default" if job.runner and job.status != "queued" else None,
            "workflow_name": "CI",
        }

    def payload(self, job: Job, action: str) -> bytes:
        with self.lock:
            body = copy.deepcopy(self._template)
            body["action"] = action
            body["workflow_job"] = self.job_json(job)
            body["repository"] |= {"name": self.repo, "full_name": f"{self.owner}/{self.repo}"}
            body["repository"]["owner"]["login"] = self.owner
        return json.dumps(body).encode()

    def headers(
        self, body: bytes, event: str = "workflow_job", secret: bytes | None = None
    ) -> dict[str, str]:
        digest = hmac.new(self.secret if secret is None else secret, body, hashlib.sha256).hexdigest()
        return {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/fake",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-GitHub-Hook-ID": "42",
            "X-Hub-Signature-256": f"sha256={digest}",
        }

    def _deliver(self, job: Job, action: str) -> None:
        if self.webhook_url is None:
            return
        body = self.payload(job, action)
        self.send_webhook(self.webhook_url, f"workflow_job.{action}", self.headers(body), body)

    # -- the REST API ---------------------------------------------------------------------------------

    def dispatch(self, request: Request) -> Reply:
        if request.headers.get("authorization") != f"Bearer {self.token}":
            with self.lock:
                self.requests.append(request)
            return Reply(401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"})
        with self.lock:
            kind = self.limited.pop(0) if self.limited else None
            self.used += 1
        reset = str(int(time.time()) + 2)
        if kind == "primary":
            with self.lock:
                self.requests.append(request)
            return Reply(
                403,
                {"message": "API rate limit exceeded for user ID 1.", "documentation_url": DOCS},
                self._limit_headers(remaining=0, reset=reset),
            )
        if kind in ("secondary", "secondary-429"):  # the docs: "a 403 or 429 response"
            with self.lock:
                self.requests.append(request)
            return Reply(
                429 if kind == "secondary-429" else 403,
                {
                    "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you "
                    "try again.",
                    "documentation_url": DOCS,
                },
                {"retry-after": self.retry_after},
            )
        reply = super().dispatch(request)
        reply.headers |= self._limit_headers(remaining=max(0, 5000 - self.used), reset=reset)
        return reply

    def _limit_headers(self, remaining: int, reset: str) -> dict[str, str]:
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(remaining),
            "x-ratelimit-used": str(self.used),
            "x-ratelimit-reset": reset,
            "x-ratelimit-resource": "core",
        }

    def _find_runner(self, match: re.Match[str]) -> Runner | None:
        return self.runners.get(int(match["id"]))

    def _list_runners(self, request: Request, match: re.Match[str]) -> Reply:
        found = [r.json() for r in self.runners.values() if request.query.get("name") in (None, r.name)]
        return Reply(200, {"total_count": len(found), "runners": found})

    def _get_runner(self, request: Request, match: re.Match[str]) -> Reply:
        runner = self._find_runner(match)
        return Reply(200, runner.json()) if runner else _not_found()

    def _delete_runner(self, request: Request, match: re.Match[str]) -> Reply:
        runner = self._find_runner(match)
        if runner is None:
            return _not_found()
        if runner.busy:
            return Reply(
                422,
                {
                    "message": f'Bad request - Runner "{runner.name}" is still running a job"',
                    "documentation_url": DOCS,
                },
            )
        del self.runners[runner.id]
        return Reply(204)

    def _labels(self, request: Request, match: re.Match[str]) -> Reply:
        runner = self._find_runner(match)
        if runner is None:
            return _not_found()
        if request.method in ("PUT", "POST"):
            try:
                labels = request.form()["labels"]
            except (KeyError, ValueError):
                return Reply(422, {"message": "Invalid request.\n\nobject is missing required key: labels."})
            if not isinstance(labels, list) or len(labels) > 100 or (request.method == "POST" and not labels):
                return Reply(422, {"message": "Validation Failed", "documentation_url": DOCS})
            if request.method == "PUT":
                runner.custom = [str(x) for x in labels]
            else:
                runner.custom += [str(x) for x in labels if x not in runner.custom]
        elif request.method == "DELETE":
            runner.custom = []
        labels_json = runner.labels()
        return Reply(200, {"total_count": len(labels_json), "labels": labels_json})

    def _get_job(self, request: Request, match: re.Match[str]) -> Reply:
        job = self.jobs.get(int(match["id"]))
        return Reply(200, self.job_json(job)) if job else _not_found()

    def _rerun(self, request: Request, match: re.Match[str]) -> Reply:
        job = self.jobs.get(int(match["id"]))
        if job is None:
            return _not_found()
        if job.status != "completed" or job.run_attempt != self.run_attempts[job.run_id]:
            return Reply(
                403,
                {
                    "message": "This job cannot be re-run: only completed jobs of the latest attempt can",
                    "documentation_url": DOCS,
                },
            )
        attempt = self.run_attempts[job.run_id] + 1
        self.run_attempts[job.run_id] = attempt
        again = Job(
            id=next(self._ids), run_id=job.run_id, run_attempt=attempt, name=job.name, runs_on=job.runs_on
        )
        self.jobs[again.id] = again
        self._pending_queued.append(again)
        return Reply(201, {})

    def _attempt_jobs(self, request: Request, match: re.Match[str]) -> Reply:
        run, attempt = int(match["run"]), int(match["n"])
        if attempt > self.run_attempts.get(run, 0):
            return _not_found()
        found = [self.job_json(j) for j in self.jobs.values() if j.run_id == run and j.run_attempt == attempt]
        return Reply(200, {"total_count": len(found), "jobs": found})


def _not_found() -> Reply:
    return Reply(404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
