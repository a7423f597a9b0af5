"""The Buildbot stand-in speaks what the controller's real Buildbot provider expects, over real HTTP,
and its rebuilt builds post JUnit for the healthy worker that ran them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import requests
from defusedxml import ElementTree

from controller.errors import RunnerNotFound
from controller.providers.base import JobRef
from controller.providers.buildbot import BuildbotProvider
from runnerctl.demo import story
from runnerctl.demo.baseline import SYNTHETIC
from runnerctl.demo.standin import BuildbotStandIn
from tests.e2e.http_receiver import http_receiver


@pytest.fixture
def told() -> story.Story:
    return story.tell(datetime(2026, 9, 21, 12, 0, tzinfo=UTC), list(SYNTHETIC.values()))


@pytest.fixture
def standin(told: story.Story) -> Iterator[BuildbotStandIn]:
    server = BuildbotStandIn(told, run_s=0.05)
    server.start()
    yield server
    server.stop()


def test_pause_state_and_unpause(standin: BuildbotStandIn) -> None:
    provider = BuildbotProvider(standin.url, timeout_s=5)
    assert provider.state("linux-04").cordoned is False
    provider.cordon("linux-04", "runnerctl: inc-1: sick (disk)")
    state = provider.state("linux-04")
    assert (state.cordoned, state.reason, state.online, state.busy) == (
        True,
        "runnerctl: inc-1: sick (disk)",
        True,
        False,
    )
    provider.uncordon("linux-04")
    assert provider.state("linux-04").cordoned is False
    with pytest.raises(RunnerNotFound):
        provider.state("linux-99")
    assert [(c.what, c.target) for c in standin.recorded()] == [
        ("pause", "linux-04"),
        ("unpause", "linux-04"),
    ]


def test_a_rebuild_runs_on_an_unpaused_worker_and_posts_its_junit(
    standin: BuildbotStandIn, told: story.Story
) -> None:
    failed = next(b for b in told.builds if b.runner == story.SICK and not b.passed)
    provider = BuildbotProvider(standin.url, timeout_s=5)
    with http_receiver() as controller:
        standin.connect(controller.url + "/v1/results/junit", "rct_ingest")
        provider.cordon(story.SICK, "runnerctl: sick")
        rerun = provider.rerun(JobRef(str(failed.buildid)))
        assert rerun.id.startswith("buildrequest:")
        outcome = _settled(provider, rerun)
        assert outcome == "passed"
        (posted,) = controller.received("/v1/results/junit")
    build = provider.build_of_request(rerun)
    assert build is not None
    worker = build["properties"]["workername"][0]
    assert worker != story.SICK
    assert posted.headers["authorization"] == "Bearer rct_ingest"
    assert (posted.query["runner_id"], posted.query["job_id"]) == (worker, str(build["buildid"]))
    assert posted.query["commit"] == failed.commit
    cases = ElementTree.fromstring(posted.body).iter("testcase")
    assert sum(1 for _ in cases) == len(story.TESTS)
    assert "rebuild of" in standin.recorded()[-1].detail and "success" in standin.recorded()[-1].detail


def test_a_build_whose_results_cannot_be_posted_fails(standin: BuildbotStandIn, told: story.Story) -> None:
    provider = BuildbotProvider(standin.url, timeout_s=5)
    standin.connect("http://127.0.0.1:9/v1/results/junit", "rct_ingest")  # nothing listens on port 9
    rerun = provider.rerun(JobRef(str(told.builds[0].buildid)))
    assert _settled(provider, rerun) == "failed"


def test_an_unknown_action_is_refused_as_buildbot_refuses_it(standin: BuildbotStandIn) -> None:
    # Buildbot 4 answers 501 with a JSON-RPC "method not found" (buildbot/www/rest.py).
    answer = requests.post(
        standin.url + "api/v2/workers/linux-01",
        json={"jsonrpc": "2.0", "method": "kill", "params": {}, "id": 1},
        timeout=5,
    )
    assert answer.status_code == 501
    assert answer.json()["error"]["code"] == -32601
    assert standin.recorded() == []


def _settled(provider: BuildbotProvider, job: JobRef) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        outcome = provider.job_outcome(job)
        if outcome != "pending":
            return outcome
        time.sleep(0.05)
    raise AssertionError(f"{job.id} still pending")
