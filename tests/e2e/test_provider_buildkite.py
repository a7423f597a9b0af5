"""The Buildkite story on real processes: a real controller (auto mode, SQLite) and the fake Buildkite
(tests/fakes/buildkite.py) running jobs on three agents, one of whose disk is full. Signed job.finished
webhooks bring the failures in; the controller judges bk-3 sick from its readings, pauses it through
the REST API, retries its failed jobs, hears them pass through the same webhooks and clears the flake
records. The webhook's refusals (bad, missing, stale signature; replay; other events) come after."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests

from tests.e2e.provider_story import FAST_AUTO, actions, post_readings, sick_incident, wait_for
from tests.fakes.buildkite import ORG, FakeBuildkite, signature
from tests.servers import Controller, running_controller

API_TOKEN = "bkua_e2e_api_token"
HOOK_TOKEN = "e2e-webhook-token"
AGENTS = ["bk-1", "bk-2", "bk-3"]
STEPS = ["lint", "unit", "integration", "e2e"]


@dataclass
class Story:
    controller: Controller
    buildkite: FakeBuildkite

    @property
    def hook(self) -> str:
        return f"{self.controller.url}/v1/webhooks/buildkite"


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    fake = FakeBuildkite(API_TOKEN, HOOK_TOKEN)
    fake.start()
    for name in AGENTS:
        fake.add_agent(name, sick=name == "bk-3")
    providers = {
        "buildkite": {
            "org": ORG,
            "token": API_TOKEN,
            "webhook_token": HOOK_TOKEN,
            "url": f"{fake.url}/v2",
            "graphql_url": f"{fake.url}/graphql/v1",
            "pool": "linux",
            "pause_check_s": 0.5,
            "timeout_s": 5,
        }
    }
    env = FAST_AUTO | {"RUNNER_CONTROLLER_PROVIDERS": json.dumps(providers)}
    try:
        with running_controller(tmp_path_factory.mktemp("buildkite"), env=env) as controller:
            fake.webhook_url = f"{controller.url}/v1/webhooks/buildkite"
            yield Story(controller, fake)
    finally:
        fake.stop()


def test_sick_agent_paused_jobs_retried_and_flakes_cleared(story: Story) -> None:
    controller, bk = story.controller, story.buildkite
    post_readings(controller, AGENTS, sick="bk-3", provider="buildkite")
    for _ in range(6):  # 24 jobs, 8 of them on bk-3: enough for the analysis to be sure
        bk.create_build(STEPS)
    bk.wait_for("every job run", bk.idle, timeout=30)
    sick_jobs = sorted(j.id for j in bk.jobs.values() if j.agent == bk.agent("bk-3").id)
    assert sick_jobs and all(bk.jobs[j].state == "failed" for j in sick_jobs)
    # Every job.finished was taken in (job.started is acknowledged and ignored).
    assert {s for e, _j, s in bk.deliveries if e == "job.finished"} == {200}
    assert {s for e, _j, s in bk.deliveries if e == "job.started"} == {202}

    incident = sick_incident(controller, "bk-3")
    assert incident["dimension"] == "disk"
    assert sorted(j["job_id"] for j in incident["affected_jobs"]) == sick_jobs

    bk3 = bk.agent("bk-3")
    wait_for(controller, "bk-3 paused in Buildkite", lambda: bk.agent("bk-3").paused)
    assert bk3.paused_note is not None and bk3.paused_note.startswith(
        f"runnerctl: {incident['id']}: sick (disk)"
    )
    assert bk3.paused_minutes == 24 * 60

    wait_for(controller, "the retries", lambda: all(bk.jobs[j].retried_in for j in sick_jobs))
    retries = [bk.jobs[j].retried_in or "" for j in sick_jobs]
    bk.wait_for("the retries to run", bk.idle, timeout=30)
    for new in retries:
        assert bk.jobs[new].state == "passed" and bk.jobs[new].agent != bk3.id

    clearance = wait_for(
        controller, "the flake clearance", lambda: controller.get("/v1/clearances").json()["items"]
    )[0]
    assert (clearance["incident"], clearance["runner"]) == (incident["id"], "bk-3")
    assert set(clearance["tests"]) == {f"job:{s}" for s in STEPS}
    tests = controller.get("/v1/tests").json()["items"]
    assert {t["test_id"] for t in tests if incident["id"] in t["cleared_by"]} == set(clearance["tests"])

    # The exact writes: one pause, one retry per failed job, nothing else.
    org = f"/v2/organizations/{ORG}"
    writes = bk.calls(under="/v2")
    assert writes[0] == f"PUT {org}/agents/{bk3.id}/pause"
    assert sorted(writes[1:]) == sorted(f"PUT {org}/jobs/{j}/retry" for j in sick_jobs)
    settled = actions(controller, action="rerun-result")
    assert {a["detail"] for a in settled} == {
        f"rerun {bk.jobs[j].retried_in} of job {j} passed" for j in sick_jobs
    }
    assert len(actions(controller, action="cordon", status="done")) == 1

    # The pause times out in Buildkite; the controller still holds bk-3, so it pauses it again.
    bk.expire_pause("bk-3")
    wait_for(controller, "bk-3 paused again", lambda: bk.agent("bk-3").paused)
    assert bk.calls(under="/v2")[len(writes) :] == [f"PUT {org}/agents/{bk3.id}/pause"]


def post(story: Story, body: bytes, headers: dict[str, str]) -> requests.Response:
    return requests.post(story.hook, data=body, headers=headers, timeout=10)


def test_webhook_refusals_store_nothing(story: Story) -> None:
    controller, bk = story.controller, story.buildkite
    (job_id,) = bk.create_build(["lint"])
    # Counted once the controller has answered Buildkite's own delivery of the finished job: a job
    # already finished may still have its delivery in flight, and it would land among the refusals.
    bk.wait_for(
        "the job's delivery",
        lambda: any(event == "job.finished" and job == job_id for event, job, _ in bk.deliveries),
        timeout=60,
    )
    # Take the delivery Buildkite sent, and send it again in each bad shape.
    body, headers = bk.delivery("job.finished", bk.jobs[job_id])
    results, deliveries = controller.count("results"), controller.count("webhook_deliveries")
    stale = int(time.time()) - 301
    bad = {
        "missing": {k: v for k, v in headers.items() if k != "X-Buildkite-Signature"},
        "wrong key": headers | {"X-Buildkite-Signature": signature("not-the-token", body, int(time.time()))},
        "stale": headers | {"X-Buildkite-Signature": signature(HOOK_TOKEN, body, stale)},
        "body changed": headers,
    }
    for case, sent in bad.items():
        answer = post(story, body.replace(b'"lint"', b'"lunt"') if case == "body changed" else body, sent)
        assert answer.status_code == 401, (case, answer.text)
    assert "no X-Buildkite-Signature or X-Buildkite-Token header" in post(story, body, bad["missing"]).text
    assert (controller.count("results"), controller.count("webhook_deliveries")) == (results, deliveries)

    # A redelivery (fresh signature, same event): 200, nothing stored twice.
    body, headers = bk.delivery("job.finished", bk.jobs[job_id])
    again = post(story, body, headers)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert (controller.count("results"), controller.count("webhook_deliveries")) == (results, deliveries)

    ping = json.dumps({"event": "ping", "service": {"id": "x"}, "sender": {"name": "Some Person"}}).encode()
    ping_headers = {
        "X-Buildkite-Event": "ping",
        "X-Buildkite-Signature": signature(HOOK_TOKEN, ping, int(time.time())),
    }
    ignored = post(story, ping, ping_headers)
    assert (ignored.status_code, ignored.json()) == (202, {"ignored": True})
    # The plain-token mode is accepted too.
    token_headers = {"X-Buildkite-Event": "ping", "X-Buildkite-Token": HOOK_TOKEN}
    assert post(story, ping, token_headers).status_code == 202
    assert post(story, ping, token_headers | {"X-Buildkite-Token": "nope"}).status_code == 401


def test_no_path_for_unconfigured_provider(story: Story) -> None:
    answer = requests.post(f"{story.controller.url}/v1/webhooks/jenkins", data=b"{}", timeout=10)
    assert answer.status_code == 404 and "configured: buildkite" in answer.json()["detail"]
