"""The Buildkite provider against the fake Buildkite (tests/fakes/buildkite.py): the exact calls it
makes, the documented error answers it meets, and the webhook signature it checks."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from controller.errors import ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.ingest.jobs import records_of
from controller.providers.base import JobRef, PayloadInvalid, WebhookRejected
from controller.providers.buildkite import BuildkiteProvider
from tests.fakes.buildkite import ORG, FakeBuildkite, fixture, signature
from tests.fakes.server import json_response

API_TOKEN = "bkua_api_secret"
HOOK_TOKEN = "hook-secret"


@pytest.fixture
def fake() -> Iterator[FakeBuildkite]:
    server = FakeBuildkite(API_TOKEN, HOOK_TOKEN)
    server.start()
    server.add_agent("bk-1")
    server.add_agent("bk-2", sick=True)
    yield server
    server.stop()


def provider(fake: FakeBuildkite, **options: object) -> BuildkiteProvider:
    return BuildkiteProvider(
        org=ORG,
        token=API_TOKEN,
        webhook_token=HOOK_TOKEN,
        url=f"{fake.url}/v2",
        graphql_url=f"{fake.url}/graphql/v1",
        timeout_s=2,
        **options,  # type: ignore[arg-type]
    )


def agents(fake: FakeBuildkite) -> str:
    return f"/v2/organizations/{ORG}/agents"


def test_cordon_state_uncordon_calls(fake: FakeBuildkite) -> None:
    bk = provider(fake, pause_minutes=90)
    agent = fake.agent("bk-2")
    bk.cordon("bk-2", "runnerctl: inc-1: sick (disk)")
    state = bk.state("bk-2")
    assert (state.online, state.busy, state.cordoned, state.reason) == (
        True,
        False,
        True,
        "runnerctl: inc-1: sick (disk)",
    )
    bk.cordon("bk-2", "again")  # 422 "Agent is already paused": already done, not an error
    bk.uncordon("bk-2")
    bk.uncordon("bk-2")  # 422 "Agent is not paused"
    assert not bk.state("bk-2").cordoned
    base = agents(fake)
    assert fake.calls(methods=("GET", "PUT")) == [
        f"GET {base}",  # the name, looked up once
        f"PUT {base}/{agent.id}/pause",
        f"GET {base}/{agent.id}",
        f"PUT {base}/{agent.id}/pause",
        f"PUT {base}/{agent.id}/resume",
        f"PUT {base}/{agent.id}/resume",
        f"GET {base}/{agent.id}",
    ]
    pause = next(r for r in fake.requests if r.path.endswith("/pause"))
    assert pause.json() == {"note": "runnerctl: inc-1: sick (disk)", "timeout_in_minutes": 90}
    assert pause.headers["authorization"] == f"Bearer {API_TOKEN}"


def test_unknown_agent_and_disconnected_agent(fake: FakeBuildkite) -> None:
    bk = provider(fake)
    with pytest.raises(RunnerNotFound, match="no connected agent named 'bk-9'"):
        bk.cordon("bk-9", "sick")
    fake.agent("bk-1").connection_state = "disconnected"
    by_id = provider(fake, runner_id="id")
    with pytest.raises(ProviderRejected, match="Only connected agents may be paused"):
        by_id.cordon(fake.agent("bk-1").id, "sick")


def test_two_connected_agents_of_one_name_are_refused(fake: FakeBuildkite) -> None:
    fake.add_agent("bk-1")
    with pytest.raises(ProviderRejected, match="2 connected agents are named 'bk-1'"):
        provider(fake).cordon("bk-1", "sick")


def test_rerun_returns_the_new_job_and_each_job_is_retried_once(fake: FakeBuildkite) -> None:
    fake.agent("bk-1").connection_state = "lost"  # the job runs on the sick agent and fails
    (job_id,) = fake.create_build(["unit"])
    fake.wait_for("the failure", lambda: fake.jobs[job_id].state == "failed")
    bk = provider(fake)
    new = bk.rerun(JobRef(job_id))
    assert new.id != job_id and fake.jobs[new.id].retry_source == {
        "job_id": job_id,
        "retry_type": "manual",
        "retried_by": {"name": "runner-controller", "email": "bot@example.com"},
    }
    assert fake.jobs[new.id].retries_count == 1
    with pytest.raises(ProviderRejected, match="already been retried"):
        bk.rerun(JobRef(job_id))
    fake.wait_for("the retry to finish", lambda: fake.jobs[new.id].state == "failed")
    assert bk.job_outcome(new) == "failed"


def test_a_failed_job_is_retried_not_a_passed_one(fake: FakeBuildkite) -> None:
    fake.agent("bk-1").connection_state = "lost"  # only the sick agent takes jobs
    (failed,) = fake.create_build(["unit"])
    fake.wait_for("the failure", lambda: fake.jobs[failed].state == "failed")
    fake.agent("bk-1").connection_state = "connected"
    fake.agent("bk-2").connection_state = "lost"
    bk = provider(fake)
    new = bk.rerun(JobRef(failed))
    fake.wait_for("the retry to pass", lambda: fake.jobs[new.id].state == "passed")
    assert bk.job_outcome(new) == "passed"
    with pytest.raises(ProviderRejected, match=r"HTTP 400: .*Only failed, timed out or canceled jobs"):
        bk.rerun(new)
    org = f"/v2/organizations/{ORG}"
    assert fake.calls() == [f"PUT {org}/jobs/{failed}/retry", f"PUT {org}/jobs/{new.id}/retry"]


def test_rate_limited_carries_the_reset(fake: FakeBuildkite) -> None:
    headers = {"RateLimit-Remaining": "0", "RateLimit-Limit": "200", "RateLimit-Reset": "42"}
    fake.fail_next(
        "PUT", rf"/v2/organizations/{ORG}/jobs/.*", json_response(429, fixture("rate_limited.json"), headers)
    )
    with pytest.raises(ProviderUnavailable) as caught:
        provider(fake).rerun(JobRef("0b461f65-e7be-4c80-888a-ef11d81fd971"))
    assert caught.value.retry_after == 42
    assert "exceeded your API rate limit" in str(caught.value)
    assert len(fake.calls()) == 1  # a retry is never sent twice


def test_a_lapsed_pause_is_renewed(fake: FakeBuildkite) -> None:
    bk = provider(fake, pause_minutes=60, pause_check_s=0)
    agent = fake.agent("bk-2")
    pause = f"PUT {agents(fake)}/{agent.id}/pause"
    bk.cordon("bk-2", "runnerctl: held")
    bk.renew_cordon("bk-2", "runnerctl: held")  # far from expiry: nothing sent
    assert fake.calls(under="/v2") == [pause]
    fake.expire_pause("bk-2")
    bk.renew_cordon("bk-2", "runnerctl: held")
    assert fake.calls(under="/v2") == [pause, pause]
    assert bk.state("bk-2").cordoned
    # Close to expiry: resume and pause back to back.
    assert agent.paused_at is not None
    agent.paused_at -= 55 * 60
    bk.renew_cordon("bk-2", "runnerctl: held")
    assert fake.calls(under="/v2")[-2:] == [f"PUT {agents(fake)}/{agent.id}/resume", pause]
    # Read at most every pause_check_s: a lapse is seen at the next read, not at once.
    slow = provider(fake, pause_minutes=60, pause_check_s=3600)
    slow.renew_cordon("bk-2", "runnerctl: held")
    writes = len(fake.calls(under="/v2"))
    fake.expire_pause("bk-2")
    slow.renew_cordon("bk-2", "runnerctl: held")
    assert len(fake.calls(under="/v2")) == writes


def test_wrong_api_token_is_a_rejection(fake: FakeBuildkite) -> None:
    bad = BuildkiteProvider(org=ORG, token="nope", url=f"{fake.url}/v2", timeout_s=2)
    with pytest.raises(ProviderRejected, match="HTTP 401"):
        bad.state("bk-1")


def test_tokens_never_in_repr() -> None:
    bk = BuildkiteProvider(org=ORG, token=API_TOKEN, webhook_token=HOOK_TOKEN)
    shown = repr(bk) + repr(bk.http) + repr(bk.graphql)
    assert API_TOKEN not in shown and HOOK_TOKEN not in shown


BODY = json.dumps({"event": "job.finished", "job": fixture("job.json")}).encode()


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({}, "no X-Buildkite-Signature or X-Buildkite-Token"),
        ({"x-buildkite-token": "wrong"}, "X-Buildkite-Token does not match"),
        ({"x-buildkite-signature": signature("wrong", BODY, 1000)}, "does not match the body"),
        ({"x-buildkite-signature": signature(HOOK_TOKEN, BODY, 1000 - 301)}, "301 s old"),
        ({"x-buildkite-signature": "sha256=abc"}, "not 'timestamp=T,signature=HEX'"),
    ],
    ids=["missing", "bad-token", "bad-signature", "stale", "malformed"],
)
def test_verify_rejects(headers: dict[str, str], error: str) -> None:
    bk = BuildkiteProvider(org=ORG, token=API_TOKEN, webhook_token=HOOK_TOKEN)
    with pytest.raises(WebhookRejected, match=error):
        bk.verify(headers, BODY, now_s=1000)


def test_verify_accepts_and_parses_the_docs_job() -> None:
    bk = BuildkiteProvider(org=ORG, token=API_TOKEN, webhook_token=HOOK_TOKEN, pool="linux")
    bk.verify({"x-buildkite-signature": signature(HOOK_TOKEN, BODY, 990)}, BODY, now_s=1000)
    bk.verify({"x-buildkite-token": HOOK_TOKEN}, BODY, now_s=time.time())
    headers = {"x-buildkite-event": "job.finished"}
    (event,) = bk.job_events(headers, BODY) or []
    assert (event.job.id, event.name, event.state) == (
        "b63254c0-3271-4a98-8270-7cfbd6c2f14e",
        "build",
        "passed",
    )
    assert event.runner is not None and (event.runner.id, event.runner.pool) == ("my-agent-123", "linux")
    assert bk.delivery_id(headers, BODY) == (
        "job.finished:b63254c0-3271-4a98-8270-7cfbd6c2f14e:passed:2015-05-09T21:06:20.000Z"
    )
    assert bk.job_events({"x-buildkite-event": "job.started"}, BODY) is None
    with pytest.raises(PayloadInvalid, match=r"X-Buildkite-Event says .job\.finished."):
        bk.job_events(headers, json.dumps({"event": "build.finished"}).encode())


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, ("success", None)),
        ({"state": "failed", "exit_status": 1}, ("failure", "exit_status 1")),
        ({"state": "failed", "exit_status": -1}, ("system_failure", "agent_lost")),
        (
            {"state": "failed", "exit_status": 255, "signal_reason": "agent_stop"},
            ("system_failure", "agent_stop"),
        ),
        ({"state": "timed_out", "exit_status": 143}, ("timed_out", None)),
        ({"state": "canceled", "exit_status": 143, "signal_reason": "cancel"}, ("cancelled", "cancel")),
        ({"state": "skipped", "exit_status": None, "started_at": None}, None),
    ],
    ids=["published-passed", "failed", "agent-lost", "agent-stop", "timed-out", "canceled", "skipped"],
)
def test_the_docs_job_becomes_a_job_record(
    change: dict[str, object], expected: tuple[str, str | None] | None
) -> None:
    bk = BuildkiteProvider(org=ORG, token=API_TOKEN, webhook_token=HOOK_TOKEN, pool="linux")
    body = {"event": "job.finished", "job": fixture("job.json") | change, "build": {"number": 1}}
    events = bk.job_events({"x-buildkite-event": "job.finished"}, json.dumps(body).encode())
    records = records_of("buildkite", events or [])
    if expected is None:
        assert records == []
        return
    (record,) = records
    assert (record.conclusion.value, record.failure_reason) == expected
    assert (record.job_id, record.run_id, record.name, record.failed_step, record.tests) == (
        "b63254c0-3271-4a98-8270-7cfbd6c2f14e",
        "?#1",
        "build",
        None,  # a Buildkite job is one step
        None,
    )
    assert record.started is not None and record.started.isoformat() == "2015-05-09T21:06:05+00:00"
    assert record.finished.isoformat() == "2015-05-09T21:06:20+00:00"
    assert (record.runner.id, record.runner.pool) == ("my-agent-123", "linux")
