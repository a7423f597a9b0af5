"""The whole story through GitHub Actions (a fake GitHub on loopback, a real controller in auto mode):
signed `workflow_job` webhooks bring gh-3's failures in, its agent's readings prove its disk full, the
controller takes gh-3's custom labels off through the REST API, reruns its failed jobs, learns from
the same webhooks that the new attempts passed on gh-1 and gh-2, and clears the tests' flake records.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator

import pytest
import requests

from tests.e2e.provider_story import (
    Agents,
    actions,
    explain_runner,
    sick_incident,
    story_controller,
    wait_for,
)
from tests.fakes.github import FakeGitHub
from tests.servers import Controller

pytestmark = pytest.mark.slow

RUNNERS = ("gh-1", "gh-2", "gh-3")
JOBS = ("unit", "lint", "integration")
RUNS_ON = ["self-hosted", "linux-x64"]
SECRET = "webhook-s3cret"
ROUNDS = 3  # three failed jobs a round on the sick runner: well beyond chance, never borderline
LABELS = "/repos/acme/web/actions/runners/3/labels"


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeGitHub, Controller, Agents]]:
    fake = FakeGitHub("acme", "web", token="ghp_e2e", webhook_secret=SECRET)
    fake.start()
    for name in RUNNERS:
        fake.add_runner(name, ["linux-x64"])
    fake.fails_on = {"gh-3"}
    providers = {
        "github": {
            "api_url": fake.url,
            "token": "ghp_e2e",
            "webhook_secret": SECRET,
            "owner": "acme",
            "repo": "web",
        }
    }
    try:
        with story_controller(tmp_path_factory.mktemp("github"), providers, pool="gh") as controller:
            fake.webhook_url = f"{controller.url}/v1/webhooks/github"
            identities = {r: {"id": r, "name": r, "pool": "gh", "provider": "github"} for r in RUNNERS}
            agents = Agents(controller, identities, sick={"gh-3"})
            agents.start()
            fake.start_ticking()
            try:
                yield fake, controller, agents
            finally:
                agents.stop()
    finally:
        fake.stop()


def test_sick_runner_cordoned_reruns_pass_elsewhere_and_flakes_clear(
    story: tuple[FakeGitHub, Controller, Agents],
) -> None:
    fake, controller, agents = story
    for _round in range(ROUNDS):
        for runner in RUNNERS:
            for name in JOBS:
                fake.queue(name, RUNS_ON, pin=runner)
    fake.wait_idle()
    failed = sorted(fake.job_id(j) for j in fake.jobs.values() if j.runner and j.runner.name == "gh-3")
    assert len(failed) == 3 * ROUNDS

    # Judged as soon as the evidence suffices; the jobs whose webhooks come later join the incident.
    incident = sick_incident(controller, "gh-3", jobs=failed)
    assert incident["dimension"] == "disk"

    wait_for(
        controller,
        "every failed job rerun",
        lambda: len(actions(controller, action="rerun", status="done")) == 3 * ROUNDS,
        30,
    )
    # Exactly one label removal, then one rerun per failed job: nothing done twice.
    writes = fake.calls()
    assert writes[0] == f"PUT {LABELS}" and fake.bodies("PUT", LABELS) == [{"labels": []}]
    reruns = sorted(f"POST /repos/acme/web/actions/jobs/{j.rpartition('/')[2]}/rerun" for j in failed)
    assert sorted(writes[1:]) == reruns
    assert fake.runner("gh-3").custom == []

    clearance = wait_for(
        controller, "the flake clearance", lambda: controller.get("/v1/clearances").json()["items"], 30
    )[0]
    assert (clearance["incident"], clearance["runner"]) == (incident["id"], "gh-3")
    assert sorted(clearance["tests"]) == sorted(f"job:{name}" for name in JOBS)
    # The controller may act before the last failure's webhook is in; that job is rerun a moment later.
    wait_for(controller, "every rerun", lambda: len(fake.calls()) == 1 + 3 * ROUNDS, 30)
    fake.wait_idle()
    second = [j for j in fake.jobs.values() if j.run_attempt == 2]
    assert len(second) == 3 * ROUNDS
    assert {j.runner.name for j in second if j.runner} <= {"gh-1", "gh-2"}
    assert all(j.conclusion == "success" for j in second)
    settled = wait_for(
        controller,
        "every rerun settled by its webhook",
        lambda: (found := actions(controller, action="rerun-result")) and len(found) == 3 * ROUNDS and found,
        30,
    )
    assert all(a["detail"].endswith("passed") for a in settled)

    # The agent of the cordoned runner is told, so where labels cannot stop it, its on_cordon can.
    wait_for(
        controller, "the cordon directive", lambda: (agents.answers.get("gh-3") or {}).get("directives"), 10
    )
    assert agents.answers["gh-3"]["directives"][0]["cordoned"] is True
    assert not (agents.answers.get("gh-1") or {}).get("directives", [{}])[0].get("cordoned")
    text = explain_runner(controller, "gh-3")
    assert "Cordoned:  yes, by runner-controller" in text
    assert "cordon via github: GitHub has no pause" in text


def _post(controller: Controller, body: bytes, headers: dict[str, str]) -> requests.Response:
    return requests.post(f"{controller.url}/v1/webhooks/github", data=body, headers=headers, timeout=30)


def test_bad_or_missing_signature_is_refused_and_nothing_stored(
    story: tuple[FakeGitHub, Controller, Agents],
) -> None:
    fake, controller, _agents = story
    job = next(iter(fake.jobs.values()))
    body = fake.payload(job, "completed")
    before = (controller.count("results"), controller.count("webhook_deliveries"))
    forged = fake.headers(body, secret=b"not-the-secret")
    assert _post(controller, body, forged).status_code == 401
    missing = {k: v for k, v in fake.headers(body).items() if k != "X-Hub-Signature-256"}
    refused = _post(controller, body, missing)
    assert refused.status_code == 401 and "X-Hub-Signature-256" in refused.json()["detail"]
    tampered = fake.headers(body)
    assert _post(controller, body.replace(b'"main"', b'"evil"'), tampered).status_code == 401
    assert (controller.count("results"), controller.count("webhook_deliveries")) == before


def test_replayed_delivery_stores_nothing_twice_and_other_events_are_ignored(
    story: tuple[FakeGitHub, Controller, Agents],
) -> None:
    fake, controller, _agents = story
    job = fake.queue("replayed", ["self-hosted", "no-such-label"])  # never runs: stays queued
    with fake.lock:
        job.runner, job.status, job.conclusion = fake.runner("gh-1"), "completed", "success"
    body = fake.payload(job, "completed")
    headers = fake.headers(body)
    before = controller.count("results")
    first = _post(controller, body, headers)
    assert (first.status_code, first.json()["duplicate"], first.json()["results"]) == (200, False, 1)
    again = _post(controller, body, headers)
    assert (again.status_code, again.json()["duplicate"]) == (200, True)
    assert controller.count("results") == before + 1
    ping = b'{"zen": "Design for failure.", "hook_id": 42}'
    assert _post(controller, ping, fake.headers(ping, event="ping")).status_code == 202
    digest = hmac.new(SECRET.encode(), ping, hashlib.sha256).hexdigest()
    assert fake.headers(ping, event="ping")["X-Hub-Signature-256"] == f"sha256={digest}"
