"""Buildkite: pause/resume an agent, retry a job, and job webhooks signed with a timestamped HMAC.

From buildkite/docs (pages/apis/rest_api/{agents,jobs}.md, pages/apis/webhooks/pipelines*.md, the
GraphQL `Agent` object); see docs/providers-buildkite-jenkins.md for what each call relies on.

Our runner id is the agent's *name* (what an operator configures and what the runner-agent beside it
can know); the REST API addresses agents by UUID, which changes every time an agent registers. Names
are mapped to UUIDs from the job webhooks (`job.agent {id, name}`) and, failing that, from the list
of connected agents filtered by name. `runner_id: "id"` uses the UUID as the runner id instead.

Quirks handled here:
- REST does not say whether an agent is paused; GraphQL does (`paused`, `pausedNote`, `pausedAt`,
  `pausedTimeoutInMinutes`), so `state` asks both.
- A pause expires (`timeout_in_minutes`; 5 minutes when omitted). We pause for `pause_minutes` and
  `renew_cordon` re-pauses when it has lapsed or is about to (a resume and a pause back to back,
  since a paused agent cannot be paused again: 422 "Agent is already paused").
- Each job id can be retried once; the retry answers the new job, whose id is the rerun's identity.
- Buildkite sends no delivery id: a delivery is identified by event, job id, job state and the job's
  last timestamp, which a redelivery of the same event repeats.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import requests

from common.auth import hmac_sha256_hex, same_secret
from common.identity import RunnerIdentity
from controller.errors import ProviderError, ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.providers.base import JobEvent, JobRef, Outcome, PayloadInvalid, RunnerState, WebhookRejected
from controller.providers.buildkite_jobs import job_conclusion, job_state, queue_of, timestamp
from controller.providers.http import ProviderHttp

NAME = "buildkite"
log = logging.getLogger(__name__)

API_URL = "https://api.buildkite.com/v2/"
GRAPHQL_URL = "https://graphql.buildkite.com/v1"
# Job events we take in; everything else (build.*, agent.*, ping) is acknowledged and ignored.
USED_EVENTS = ("job.finished",)
PAUSE_QUERY = (
    "query RunnerctlAgentPause($slug: ID!) { agent(slug: $slug) "
    "{ uuid name connectionState paused pausedNote pausedAt pausedTimeoutInMinutes } }"
)


@dataclass(frozen=True)
class Pause:
    paused: bool
    note: str | None
    expires_at: float | None  # epoch seconds; None when unknown


class BuildkiteProvider:
    NAME = NAME

    def __init__(
        self,
        org: str,
        token: str,
        webhook_token: str | None = None,
        url: str = API_URL,
        graphql_url: str = GRAPHQL_URL,
        pause_minutes: int = 24 * 60,
        pause_check_s: float = 60.0,
        max_skew_s: float = 300.0,
        runner_id: str = "name",
        pool: str | None = None,
        timeout_s: float = 10.0,
        **_ignored: Any,
    ) -> None:
        if runner_id not in ("name", "id"):
            raise ValueError(f"buildkite runner_id must be 'name' or 'id', not {runner_id!r}")
        if pause_minutes < 1:
            raise ValueError("buildkite pause_minutes must be at least 1")
        self.org = org
        self.pause_minutes = pause_minutes
        self.pause_check_s = pause_check_s
        self.max_skew_s = max_skew_s
        self.runner_id = runner_id
        self.pool = pool
        auth = {"Authorization": f"Bearer {token}"}
        self.http = ProviderHttp(
            NAME, f"{url.rstrip('/')}/organizations/{org}/", headers=auth, timeout_s=timeout_s
        )
        graphql_base, _, self._graphql_path = graphql_url.rstrip("/").rpartition("/")
        self.graphql = ProviderHttp(NAME, graphql_base, headers=auth, timeout_s=timeout_s)
        self._webhook_key = webhook_token.encode() if webhook_token else None
        self._lock = threading.Lock()
        self._agent_ids: dict[str, str] = {}  # agent name -> UUID, learnt from webhooks and lookups
        # UUID -> (when its pause was last read, when Buildkite says it expires): read again every
        # pause_check_s, since a person may resume it and Buildkite may cap the timeout we asked for.
        self._pause_seen: dict[str, tuple[float, float | None]] = {}

    def __repr__(self) -> str:  # never the tokens
        return f"BuildkiteProvider(org={self.org!r}, url={self.http.base!r})"

    # -- the protocol ---------------------------------------------------------------------------------

    def cordon(self, runner: str, reason: str) -> None:
        agent = self._agent_id(runner)
        self._pause(agent, reason)

    def uncordon(self, runner: str) -> None:
        agent = self._agent_id(runner)
        response = self._send("PUT", f"agents/{agent}/resume", f"agent {runner}", json={}, ok=(422,))
        if response.status_code == 422 and "not paused" not in _message(response):
            raise ProviderRejected(NAME, f"resume agent {runner}: {_message(response)}", 422)
        with self._lock:
            self._pause_seen.pop(agent, None)

    def state(self, runner: str) -> RunnerState:
        agent = self._agent_id(runner)
        body = self._json("GET", f"agents/{agent}", f"agent {runner}")
        pause = self._pause_state(agent, runner)
        return RunnerState(
            online=body.get("connection_state") == "connected",
            busy=body.get("job") is not None,
            cordoned=pause.paused,
            reason=pause.note if pause.paused else None,
        )

    def rerun(self, job: JobRef) -> JobRef:
        # Not idempotent: a 5xx after Buildkite queued the retry must not queue a second one.
        new = self._json("PUT", f"jobs/{job.id}/retry", f"job {job.id}", retry=False)
        if not isinstance(new, dict) or not new.get("id"):
            raise ProviderError(NAME, f"retry of job {job.id} answered no job: {new!r}")
        return JobRef(str(new["id"]), job.run_id)

    def job_outcome(self, job: JobRef) -> Outcome:
        body = self._json("GET", f"jobs/{job.id}", f"job {job.id}")
        state = job_state(body)
        if state in ("queued", "running"):
            return "pending"
        return "passed" if state == "passed" else "failed"

    # -- keeping a pause alive ------------------------------------------------------------------------

    def renew_cordon(self, runner: str, reason: str) -> None:
        """Re-pause an agent whose pause (ours) has lapsed or lapses within the margin; the pause is
        read from Buildkite at most every `pause_check_s`."""
        agent = self._agent_id(runner)
        now = time.time()
        margin = min(600.0, self.pause_minutes * 15.0)  # a quarter of the pause, at most 10 minutes
        with self._lock:
            seen = self._pause_seen.get(agent)
        if (
            seen is not None
            and now - seen[0] < self.pause_check_s
            and (seen[1] is None or seen[1] - now > margin)
        ):
            return
        pause = self._pause_state(agent, runner)
        with self._lock:
            self._pause_seen[agent] = (now, pause.expires_at)
        if pause.paused and (pause.expires_at is None or pause.expires_at - now > margin):
            return
        if pause.paused:
            # Buildkite refuses to pause a paused agent: resume and pause back to back, the window
            # between them one round trip.
            self._send("PUT", f"agents/{agent}/resume", f"agent {runner}", json={}, ok=(422,))
        log.info(
            "buildkite: re-pausing agent %s (pause %s)", runner, "expiring" if pause.paused else "lapsed"
        )
        self._pause(agent, reason)

    # -- webhooks -------------------------------------------------------------------------------------

    def verify(self, headers: Mapping[str, str], body: bytes, now_s: float) -> None:
        if self._webhook_key is None:
            raise WebhookRejected("no webhook_token configured for buildkite: every delivery is refused")
        signature = headers.get("x-buildkite-signature")
        if signature is not None:
            parts = dict(p.strip().split("=", 1) for p in signature.split(",") if "=" in p)
            stamp, given = parts.get("timestamp", ""), parts.get("signature", "")
            if not stamp.isdigit() or not given:
                raise WebhookRejected("X-Buildkite-Signature is not 'timestamp=T,signature=HEX'")
            expected = hmac_sha256_hex(self._webhook_key, stamp.encode() + b"." + body)
            if not same_secret(expected, given.lower()):
                raise WebhookRejected("X-Buildkite-Signature does not match the body")
            age = now_s - int(stamp)
            if abs(age) > self.max_skew_s:
                raise WebhookRejected(
                    f"X-Buildkite-Signature timestamp is {age:.0f} s old (limit {self.max_skew_s:.0f} s): "
                    "a replay, or a clock far off"
                )
            return
        token = headers.get("x-buildkite-token")
        if token is None:
            raise WebhookRejected("no X-Buildkite-Signature or X-Buildkite-Token header")
        if not same_secret(token, self._webhook_key):
            raise WebhookRejected("X-Buildkite-Token does not match")

    def delivery_id(self, headers: Mapping[str, str], body: bytes) -> str | None:
        event = headers.get("x-buildkite-event", "")
        job = _parse(body).get("job")
        if not isinstance(job, dict) or not job.get("id"):
            return None
        stamp = job.get("finished_at") or job.get("started_at") or job.get("scheduled_at") or ""
        return f"{event}:{job['id']}:{job.get('state')}:{stamp}"

    def job_events(self, headers: Mapping[str, str], body: bytes) -> list[JobEvent] | None:
        event = headers.get("x-buildkite-event")
        if event not in USED_EVENTS:
            return None
        payload = _parse(body)
        if payload.get("event") not in (None, event):
            raise PayloadInvalid(
                f"body says event {payload.get('event')!r}, X-Buildkite-Event says {event!r}"
            )
        job = payload.get("job")
        if not isinstance(job, dict) or not isinstance(job.get("id"), str):
            raise PayloadInvalid(f"{event}: no job object with an id")
        if job.get("type", "script") != "script":
            return []  # wait, block and trigger steps run on no agent
        runner = self._runner_of(job)
        finished = job.get("finished_at") or job.get("started_at")
        build, pipeline = _object(payload, "build"), _object(payload, "pipeline")
        run_id = f"{pipeline.get('slug', '?')}#{build['number']}" if build.get("number") is not None else None
        when = timestamp(event, "finished_at", finished) or datetime.now(UTC)
        conclusion, reason = job_conclusion(job)
        return [
            JobEvent(
                job=JobRef(job["id"], run_id),
                name=str(job.get("step_key") or job.get("name") or job["id"]),
                state=job_state(job),
                time=when,
                runner=runner,
                attempt=int(job.get("retries_count") or 0),
                conclusion=conclusion,
                started=timestamp(event, "started_at", job.get("started_at")) if conclusion else None,
                failure_reason=reason,
            )
        ]

    def _runner_of(self, job: dict[str, Any]) -> RunnerIdentity | None:
        agent = job.get("agent")
        if not isinstance(agent, dict) or not agent.get("id") or not agent.get("name"):
            return None
        with self._lock:
            self._agent_ids[str(agent["name"])] = str(agent["id"])
        rid = str(agent["name"] if self.runner_id == "name" else agent["id"])
        return RunnerIdentity(id=rid, name=str(agent["name"]), pool=self.pool or queue_of(job), provider=NAME)

    # -- agents ---------------------------------------------------------------------------------------

    def _agent_id(self, runner: str) -> str:
        if self.runner_id == "id":
            return runner
        with self._lock:
            known = self._agent_ids.get(runner)
        if known is not None:
            return known
        # Only connected and stopping agents are listed, which is all a pause can act on anyway.
        listed = self._json("GET", "agents", f"agent {runner}", params={"name": runner, "per_page": 100})
        matches = [a for a in listed or [] if a.get("name") == runner]
        if not matches:
            raise RunnerNotFound(NAME, f"no connected agent named {runner!r}")
        if len(matches) > 1:
            ids = ", ".join(a["id"] for a in matches)
            raise ProviderRejected(NAME, f"{len(matches)} connected agents are named {runner!r} ({ids})")
        with self._lock:
            self._agent_ids[runner] = matches[0]["id"]
        return str(matches[0]["id"])

    def _pause(self, agent: str, note: str) -> None:
        body = {"note": note, "timeout_in_minutes": self.pause_minutes}
        response = self._send("PUT", f"agents/{agent}/pause", f"agent {agent}", json=body, ok=(422,))
        if response.status_code == 422 and "already paused" not in _message(response):
            raise ProviderRejected(NAME, f"pause agent {agent}: {_message(response)}", 422)

    def _pause_state(self, agent: str, runner: str) -> Pause:
        variables = {"slug": f"{self.org}/{agent}"}
        body = self.graphql.json(
            "POST", self._graphql_path, f"agent {runner}", json={"query": PAUSE_QUERY, "variables": variables}
        )
        if not isinstance(body, dict) or body.get("errors"):
            errors = body.get("errors") if isinstance(body, dict) else body
            raise ProviderRejected(NAME, f"GraphQL agent {runner}: {errors}")
        found = (body.get("data") or {}).get("agent")
        if not found:
            raise RunnerNotFound(NAME, f"GraphQL knows no agent {variables['slug']}")
        expires = None
        if found.get("paused") and found.get("pausedAt") and found.get("pausedTimeoutInMinutes"):
            started = datetime.fromisoformat(found["pausedAt"]).timestamp()
            expires = started + 60 * int(found["pausedTimeoutInMinutes"])
        return Pause(bool(found.get("paused")), found.get("pausedNote"), expires)

    # -- HTTP -----------------------------------------------------------------------------------------

    def _send(self, method: str, path: str, what: str, **kwargs: Any) -> requests.Response:
        ok = (*kwargs.pop("ok", ()), 429)
        try:
            response = self.http.send(method, path, what, ok=ok, **kwargs)
        except RunnerNotFound:
            with self._lock:  # an agent that registered again has a new UUID: look it up afresh
                self._agent_ids = {n: i for n, i in self._agent_ids.items() if f"agents/{i}" not in path}
            raise
        if response.status_code == 429:
            # Buildkite sends no Retry-After, but says when its window resets.
            reset = [response.headers.get(h, "") for h in ("RateLimit-Reset", "RateLimit-User-Reset")]
            waits = [float(v) for v in reset if v.replace(".", "", 1).isdigit()]
            raise ProviderUnavailable(
                NAME, f"{method} {path}: HTTP 429 {_message(response)}", retry_after=max(waits, default=None)
            )
        return response

    def _json(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        response = self._send(method, path, what, **kwargs)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as error:
            raise ProviderRejected(NAME, f"{method} {path}: not JSON", response.status_code) from error


def _parse(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except ValueError as error:
        raise PayloadInvalid(f"body is not JSON: {error}") from error
    if not isinstance(payload, dict):
        raise PayloadInvalid("body is not a JSON object")
    return payload


def _object(payload: Mapping[str, Any], key: str) -> dict[str, Any]:
    found = payload.get(key)
    return found if isinstance(found, dict) else {}


def _message(response: requests.Response) -> str:
    try:
        return str(response.json().get("message", response.text))
    except (ValueError, AttributeError):
        return response.text[:200]
