"""A fake Buildkite on loopback: the REST agents and jobs endpoints, the GraphQL agent pause fields, a
dispatcher that runs scheduled jobs on agents that may take them, and signed job webhooks.

Built from the published docs, repo buildkite/docs at 35cf0294c6ea68f41d90da114120d73278f6fc0b:
- pages/apis/rest_api/agents.md: agent JSON; the list holds only connected and stopping agents
  (`?name=`); pause/resume answer 204, 404 "No agent found", 422 "Agent is already paused",
  422 "Only connected agents may be paused", 422 "Agent is not paused".
- pages/agent/self_hosted/pausing_and_resuming.md: a pause times out (5 minutes by default), and a
  paused agent finishes its current job.
- pages/apis/rest_api/jobs.md: org-scoped `GET jobs/{id}`; `PUT jobs/{id}/retry` answers 200 with
  the new job (`state: scheduled`, `retries_count`), 400 "Only failed, timed out or canceled jobs can
  be retried", and each job id can be retried once.
- pages/apis/rest_api/rate_limits.md: 429 body and `RateLimit-*` headers (no Retry-After).
- pages/apis/webhooks/pipelines.md, _webhook_token.md, _webhook_signature.md,
  _verifying_hmac_signatures.md, pipelines/job_events.md: `X-Buildkite-Event`, and either
  `X-Buildkite-Token` or `X-Buildkite-Signature: timestamp=T,signature=hex(HMAC-SHA256(token, "T.body"))`;
  body `{event, job, build, pipeline, sender}`, `job.retry_source` on a retried job.
- pages/apis/graphql/schemas/object/agent.md and query/agent.md: `agent(slug: "org/uuid")` with
  `paused, pausedNote, pausedAt, pausedTimeoutInMinutes`.
Job, agent, build and pipeline objects start from the docs' examples in tests/fixtures/providers/buildkite/.

Where the docs are silent (assumptions, said so in docs/providers-buildkite-jenkins.md): a second retry
of one job id answers 422 "Job has already been retried"; the GraphQL endpoint answers only the agent
query; a missing or wrong token answers 401 `{"message": ...}`.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import itertools
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from tests.fakes.server import FakeServer, Request, Response, json_response

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers" / "buildkite"
ORG = "my-great-org"
PIPELINE = "great-pipeline"


def fixture(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return found


def iso(t: float | None) -> str | None:
    return (
        None
        if t is None
        else datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def signature(token: str, body: bytes, timestamp: int) -> str:
    digest = hmac.new(token.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"timestamp={timestamp},signature={digest}"


@dataclass
class Agent:
    id: str
    name: str
    queue: str
    sick: bool = False
    connection_state: str = "connected"
    paused_at: float | None = None
    paused_note: str | None = None
    paused_minutes: int = 5
    job: str | None = None

    @property
    def paused(self) -> bool:
        return self.paused_at is not None


@dataclass
class Job:
    id: str
    step_key: str
    build: int
    queue: str
    state: str = "scheduled"
    exit_status: int | None = None
    agent: str | None = None
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    retried_in: str | None = None
    retries_count: int | None = None
    retry_source: dict[str, Any] | None = None


class FakeBuildkite(FakeServer):
    def __init__(
        self, api_token: str, webhook_token: str, mode: str = "signature", run_s: float = 0.05
    ) -> None:
        super().__init__()
        self.api_token = api_token
        self.webhook_token = webhook_token
        self.mode = mode  # "signature" | "token": what the Webhook Notification service is set to send
        self.run_s = run_s
        self.webhook_url: str | None = None
        self.agents: dict[str, Agent] = {}
        self.jobs: dict[str, Job] = {}
        self.deliveries: list[tuple[str, str, int]] = []  # (event, job id, HTTP status from the receiver)
        self._builds = itertools.count(1)
        self._turn = 0
        self._stop = threading.Event()
        org = rf"/v2/organizations/{ORG}"
        uid = r"(?P<id>[0-9a-f-]+)"
        self.route("GET", rf"{org}/agents", self._list_agents)
        self.route("GET", rf"{org}/agents/{uid}", self._get_agent)
        self.route("PUT", rf"{org}/agents/{uid}/pause", self._pause)
        self.route("PUT", rf"{org}/agents/{uid}/resume", self._resume)
        self.route("GET", rf"{org}/jobs/{uid}", self._get_job)
        self.route("PUT", rf"{org}/jobs/{uid}/retry", self._retry)
        self.route("POST", r"/graphql/v1", self._graphql)

    # -- the world ------------------------------------------------------------------------------------

    def start(self) -> None:
        super().start()
        threading.Thread(target=self._dispatch_loop, name="fake-buildkite-dispatch", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        super().stop()

    def add_agent(self, name: str, queue: str = "linux", sick: bool = False) -> Agent:
        with self.lock:
            agent = Agent(str(uuid.uuid4()), name, queue, sick)
            self.agents[agent.id] = agent
            return agent

    def agent(self, name: str) -> Agent:
        with self.lock:
            return next(a for a in self.agents.values() if a.name == name)

    def create_build(self, steps: list[str], queue: str = "linux") -> list[str]:
        """A build with one command job per step, all scheduled; returns the job ids."""
        with self.lock:
            number = next(self._builds)
            made = [Job(str(uuid.uuid4()), step, number, queue) for step in steps]
            self.jobs.update((j.id, j) for j in made)
            return [j.id for j in made]

    def expire_pause(self, name: str) -> None:
        """Move an agent's pause back in time so that it has just timed out (and is resumed)."""
        with self.lock:
            agent = self.agent(name)
            if agent.paused_at is not None:
                agent.paused_at -= agent.paused_minutes * 60 + 1
            self._expire_pauses()

    def idle(self) -> bool:
        with self.lock:
            return not any(j.state in ("scheduled", "running") for j in self.jobs.values())

    # -- the dispatcher: jobs run one at a time, round robin over the agents that may take them ----------

    def _dispatch_loop(self) -> None:
        while not self._stop.wait(0.02):
            started = self._start_next()
            if started is None:
                continue
            self._send("job.started", started)
            time.sleep(self.run_s)
            with self.lock:
                job = self.jobs[started.id]
                agent = self.agents[job.agent or ""]
                job.exit_status = 1 if agent.sick else 0
                job.state = "failed" if agent.sick else "passed"
                job.finished = time.time()
                agent.job = None
            self._send("job.finished", job)

    def _start_next(self) -> Job | None:
        with self.lock:
            self._expire_pauses()
            waiting = sorted(
                (j for j in self.jobs.values() if j.state == "scheduled"), key=lambda j: j.created
            )
            agents = sorted(self.agents.values(), key=lambda a: a.name)
            for job in waiting:
                free = [
                    a
                    for a in agents
                    if a.queue == job.queue
                    and a.connection_state == "connected"
                    and not a.paused
                    and a.job is None
                ]
                if not free:
                    continue
                agent = free[self._turn % len(free)]
                self._turn += 1
                job.state, job.agent, job.started = "running", agent.id, time.time()
                agent.job = job.id
                return job
            return None

    def _expire_pauses(self) -> None:
        now = time.time()
        for agent in self.agents.values():
            if agent.paused_at is not None and agent.paused_at + agent.paused_minutes * 60 <= now:
                agent.paused_at, agent.paused_note = None, None

    # -- webhooks -------------------------------------------------------------------------------------

    def delivery(self, event: str, job: Job, timestamp: int | None = None) -> tuple[bytes, dict[str, str]]:
        """The body and headers Buildkite would send for `event` about `job`."""
        with self.lock:
            body = json.dumps(
                {
                    "event": event,
                    "job": self._job_json(job),
                    "build": fixture("build.json") | {"number": job.build, "id": f"build-{job.build}"},
                    "pipeline": fixture("pipeline.json"),
                    "sender": {"id": "8a7693f8-dbae-4783-9137-84090fce9045", "name": "Some Person"},
                }
            ).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Buildkite-Request",
            "X-Buildkite-Event": event,
        }
        if self.mode == "signature":
            headers["X-Buildkite-Signature"] = signature(
                self.webhook_token, body, int(time.time()) if timestamp is None else timestamp
            )
        else:
            headers["X-Buildkite-Token"] = self.webhook_token
        return body, headers

    def _send(self, event: str, job: Job) -> None:
        if self.webhook_url is None:
            return
        body, headers = self.delivery(event, job)
        try:
            status = requests.post(self.webhook_url, data=body, headers=headers, timeout=10).status_code
        except requests.RequestException:
            status = 0
        with self.lock:
            self.deliveries.append((event, job.id, status))

    # -- JSON -----------------------------------------------------------------------------------------

    def _agent_json(self, agent: Agent) -> dict[str, Any]:
        return fixture("agent.json") | {
            "id": agent.id,
            "url": f"https://api.buildkite.com/v2/organizations/{ORG}/agents/{agent.id}",
            "name": agent.name,
            "hostname": agent.name,
            "connection_state": agent.connection_state,
            "queue": agent.queue,
            "meta_data": [f"queue={agent.queue}"],
            "job": self._job_json(self.jobs[agent.job]) if agent.job else None,
        }

    def _job_json(self, job: Job) -> dict[str, Any]:
        agent = self.agents.get(job.agent or "")
        body = copy.deepcopy(fixture("job.json"))
        build_url = (
            f"https://api.buildkite.com/v2/organizations/{ORG}/pipelines/{PIPELINE}/builds/{job.build}"
        )
        body.update(
            id=job.id,
            name=job.step_key,
            step_key=job.step_key,
            agent_query_rules=[f"queue={job.queue}"],
            state=job.state,
            build_url=build_url,
            web_url=f"https://buildkite.com/{ORG}/{PIPELINE}/builds/{job.build}#{job.id}",
            exit_status=job.exit_status,
            created_at=iso(job.created),
            scheduled_at=iso(job.created),
            runnable_at=iso(job.created),
            started_at=iso(job.started),
            finished_at=iso(job.finished),
            retried=job.retried_in is not None,
            retried_in_job_id=job.retried_in,
            retries_count=job.retries_count,
            retry_source=job.retry_source,
            retry_type=(job.retry_source or {}).get("retry_type"),
            agent=None
            if agent is None
            else {
                "id": agent.id,
                "url": f"https://api.buildkite.com/v2/organizations/{ORG}/agents/{agent.id}",
                "name": agent.name,
            },
        )
        return body

    # -- REST -----------------------------------------------------------------------------------------

    def authenticate(self, request: Request) -> Response | None:
        if request.headers.get("authorization") == f"Bearer {self.api_token}":
            return None
        return json_response(
            401, {"message": "Authentication required. Please supply a valid API Access Token"}
        )

    def not_found(self, request: Request) -> Response:
        return json_response(404, {"message": "Not Found"})

    def _list_agents(self, request: Request, _m: re.Match[str]) -> Response:
        name = request.arg("name")
        listed = [
            self._agent_json(a)
            for a in sorted(self.agents.values(), key=lambda a: a.name)
            if a.connection_state in ("connected", "stopping") and (name is None or a.name == name)
        ]
        return json_response(200, listed)

    def _found_agent(self, m: re.Match[str]) -> Agent | Response:
        agent = self.agents.get(m["id"])
        return json_response(404, {"message": "No agent found"}) if agent is None else agent

    def _get_agent(self, _r: Request, m: re.Match[str]) -> Response:
        agent = self._found_agent(m)
        return agent if isinstance(agent, Response) else json_response(200, self._agent_json(agent))

    def _pause(self, request: Request, m: re.Match[str]) -> Response:
        agent = self._found_agent(m)
        if isinstance(agent, Response):
            return agent
        self._expire_pauses()
        if agent.paused:
            return json_response(422, {"message": "Agent is already paused"})
        if agent.connection_state != "connected":
            return json_response(422, {"message": "Only connected agents may be paused"})
        body = request.json() or {}
        agent.paused_at = time.time()
        agent.paused_note = body.get("note")
        agent.paused_minutes = int(body.get("timeout_in_minutes") or 5)
        return Response(204)

    def _resume(self, _r: Request, m: re.Match[str]) -> Response:
        agent = self._found_agent(m)
        if isinstance(agent, Response):
            return agent
        self._expire_pauses()
        if not agent.paused:
            return json_response(422, {"message": "Agent is not paused"})
        agent.paused_at, agent.paused_note = None, None
        return Response(204)

    def _get_job(self, _r: Request, m: re.Match[str]) -> Response:
        job = self.jobs.get(m["id"])
        if job is None:
            return json_response(404, {"message": "No job found"})
        return json_response(200, self._job_json(job))

    def _retry(self, _r: Request, m: re.Match[str]) -> Response:
        job = self.jobs.get(m["id"])
        if job is None:
            return json_response(404, {"message": "No job found"})
        if job.state not in ("failed", "timed_out", "canceled"):
            return json_response(400, {"message": "Only failed, timed out or canceled jobs can be retried"})
        if job.retried_in is not None:
            return json_response(422, {"message": "Job has already been retried"})
        new = Job(str(uuid.uuid4()), job.step_key, job.build, job.queue)
        new.retries_count = (job.retries_count or 0) + 1
        new.retry_source = {
            "job_id": job.id,
            "retry_type": "manual",
            "retried_by": {"name": "runner-controller", "email": "bot@example.com"},
        }
        job.retried_in = new.id
        self.jobs[new.id] = new
        return json_response(200, self._job_json(new))

    def _graphql(self, request: Request, _m: re.Match[str]) -> Response:
        body = request.json() or {}
        query = str(body.get("query", ""))
        if not re.search(r"\bagent\(slug:", query):
            return json_response(
                200, {"errors": [{"message": "this fake answers only the agent(slug:) query"}]}
            )
        slug = str((body.get("variables") or {}).get("slug", ""))
        org, _, agent_id = slug.partition("/")
        self._expire_pauses()
        agent = self.agents.get(agent_id) if org == ORG else None
        if agent is None:
            return json_response(200, {"data": {"agent": None}})
        return json_response(
            200,
            {
                "data": {
                    "agent": {
                        "uuid": agent.id,
                        "name": agent.name,
                        "connectionState": agent.connection_state,
                        "paused": agent.paused,
                        "pausedNote": agent.paused_note,
                        "pausedAt": iso(agent.paused_at),
                        "pausedTimeoutInMinutes": agent.paused_minutes if agent.paused else 0,
                    }
                }
            },
        )
