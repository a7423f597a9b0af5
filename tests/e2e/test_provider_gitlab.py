"""The whole story through GitLab CI (a fake GitLab on loopback, a real controller in auto mode): Job
Hook webhooks bring runner 103's failures in, its agent's readings prove its disk full, the controller
pauses it through `PUT /runners/103`, retries its failed jobs, learns from the same webhooks that the
new jobs passed on 101 and 102, and clears the tests' flake records.
"""

from __future__ import annotations

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
from tests.fakes.gitlab import FakeGitLab
from tests.servers import Controller

pytestmark = pytest.mark.slow

RUNNERS = {101: "gl-1", 102: "gl-2", 103: "gl-3"}
JOBS = ("rspec", "lint", "karma")
TAGS = ["linux", "docker"]
SECRET = "webhook-s3cret"
ROUNDS = 3  # three failed jobs a round on the sick runner: well beyond chance, never borderline


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeGitLab, Controller, Agents]]:
    fake = FakeGitLab(token="glpat-e2e", webhook_secret=SECRET)
    fake.start()
    for number, description in RUNNERS.items():
        fake.add_runner(number, description, TAGS)
    fake.fails_on = {"gl-3"}
    providers = {"gitlab": {"api_url": fake.url + "/api/v4", "token": "glpat-e2e", "webhook_secret": SECRET}}
    try:
        with story_controller(tmp_path_factory.mktemp("gitlab"), providers, pool="gl") as controller:
            fake.webhook_url = f"{controller.url}/v1/webhooks/gitlab"
            identities = {
                str(n): {"id": str(n), "name": d, "pool": "gl", "provider": "gitlab"}
                for n, d in RUNNERS.items()
            }
            agents = Agents(controller, identities, sick={"103"})
            agents.start()
            fake.start_ticking()
            try:
                yield fake, controller, agents
            finally:
                agents.stop()
    finally:
        fake.stop()


def test_sick_runner_paused_retries_pass_elsewhere_and_flakes_clear(
    story: tuple[FakeGitLab, Controller, Agents],
) -> None:
    fake, controller, _agents = story
    for _round in range(ROUNDS):
        for description in RUNNERS.values():
            for name in JOBS:
                fake.queue(name, TAGS, pin=description)
    fake.wait_idle()
    failed = sorted(fake.job_id(j) for j in fake.jobs.values() if j.status == "failed")
    assert len(failed) == 3 * ROUNDS

    # Judged as soon as the evidence suffices; the jobs whose webhooks come later join the incident.
    incident = sick_incident(controller, "103", jobs=failed)
    assert incident["dimension"] == "disk"

    wait_for(
        controller,
        "every failed job retried",
        lambda: len(actions(controller, action="rerun", status="done")) == 3 * ROUNDS,
        30,
    )
    writes = fake.calls()
    assert writes[0] == "PUT /api/v4/runners/103"
    (pause,) = fake.bodies("PUT", "/api/v4/runners/103")
    assert pause["paused"] == "true" and pause["maintenance_note"].startswith(f"runnerctl: {incident['id']}")
    retries = sorted(f"POST /api/v4/projects/380/jobs/{j.partition('/')[2]}/retry" for j in failed)
    assert sorted(writes[1:]) == retries
    assert fake.runners[103].paused

    clearance = wait_for(
        controller, "the flake clearance", lambda: controller.get("/v1/clearances").json()["items"], 30
    )[0]
    assert (clearance["incident"], clearance["runner"]) == (incident["id"], "103")
    assert sorted(clearance["tests"]) == sorted(f"job:{name}" for name in JOBS)
    # The controller may act before the last failure's webhook is in; that job is rerun a moment later.
    wait_for(controller, "every rerun", lambda: len(fake.calls()) == 1 + 3 * ROUNDS, 30)
    fake.wait_idle()
    retried = [j for j in fake.jobs.values() if j.retries_count == 1]
    assert len(retried) == 3 * ROUNDS
    assert {j.runner.id for j in retried if j.runner} <= {101, 102}
    assert all(j.status == "success" for j in retried)
    settled = wait_for(
        controller,
        "every rerun settled by its webhook",
        lambda: (found := actions(controller, action="rerun-result")) and len(found) == 3 * ROUNDS and found,
        30,
    )
    assert all(a["detail"].endswith("passed") for a in settled)
    text = explain_runner(controller, "103")
    assert "Cordoned:  yes, by runner-controller" in text
    assert "cordon via gitlab: paused in GitLab" in text


def _post(controller: Controller, body: bytes, headers: dict[str, str]) -> requests.Response:
    return requests.post(f"{controller.url}/v1/webhooks/gitlab", data=body, headers=headers, timeout=30)


def test_bad_or_missing_token_is_refused_and_nothing_stored(
    story: tuple[FakeGitLab, Controller, Agents],
) -> None:
    fake, controller, _agents = story
    body = fake.payload(next(iter(fake.jobs.values())))
    before = (controller.count("results"), controller.count("webhook_deliveries"))
    assert _post(controller, body, fake.headers(token="guess")).status_code == 401
    missing = {k: v for k, v in fake.headers().items() if k != "X-Gitlab-Token"}
    refused = _post(controller, body, missing)
    assert refused.status_code == 401 and "X-Gitlab-Token" in refused.json()["detail"]
    assert (controller.count("results"), controller.count("webhook_deliveries")) == before


def test_replayed_delivery_stores_nothing_twice_and_other_events_are_ignored(
    story: tuple[FakeGitLab, Controller, Agents],
) -> None:
    fake, controller, _agents = story
    job = fake.queue("replayed", ["windows"])  # no runner has the tag: stays pending
    with fake.lock:
        job.runner, job.status, job.finished_at = fake.runners[101], "success", job.created_at
    body = fake.payload(job)
    headers = fake.headers()
    before = controller.count("results")
    first = _post(controller, body, headers)
    assert (first.status_code, first.json()["duplicate"], first.json()["results"]) == (200, False, 1)
    again = _post(controller, body, headers)  # GitLab's retry keeps the Idempotency-Key
    assert (again.status_code, again.json()["duplicate"]) == (200, True)
    assert controller.count("results") == before + 1
    pipeline = b'{"object_kind": "pipeline"}'
    assert _post(controller, pipeline, fake.headers(event="Pipeline Hook")).status_code == 202
