"""The Jenkins provider against the fake Jenkins (tests/fakes/jenkins.py): the exact calls, crumbs
for password auth and none for API tokens, reruns through the queue, and polling builds with their
JUnit reports."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from controller.errors import ProviderRejected, RunnerNotFound
from controller.ingest.jobs import records_of
from controller.providers.base import JobRef
from controller.providers.jenkins import JenkinsProvider
from tests.fakes.jenkins import FakeJenkins

USER, TOKEN, PASSWORD = "bot", "11aa22bb33cc44dd55ee66ff77aa88bb99", "pa55word"


@pytest.fixture
def fake() -> Iterator[FakeJenkins]:
    server = FakeJenkins(USER, TOKEN, PASSWORD)
    server.start()
    server.add_node("", executors=0)  # the built-in node runs nothing
    server.add_node("linux-01")
    server.add_node("linux-02", sick=True)
    server.add_job("app-tests", ["tests.test_io.test_read", "tests.test_io.test_write"])
    server.add_job("folder/lib-tests", ["lib.test_core.test_parse"])
    yield server
    server.stop()


def provider(fake: FakeJenkins, **options: object) -> JenkinsProvider:
    config: dict[str, object] = {
        "username": USER,
        "api_token": TOKEN,
        "jobs": ["app-tests", "folder/lib-tests"],
    }
    return JenkinsProvider(url=fake.url, timeout_s=2, **(config | options))  # type: ignore[arg-type]


def test_cordon_state_uncordon_with_an_api_token(fake: FakeJenkins) -> None:
    jenkins = provider(fake)
    jenkins.uncordon("linux-02")  # online already: nothing to flip
    jenkins.cordon("linux-02", "runnerctl: inc-1: sick (disk)")
    jenkins.cordon("linux-02", "runnerctl: inc-1: sick (disk)")  # idempotent
    state = jenkins.state("linux-02")
    assert (state.online, state.busy, state.cordoned, state.reason) == (
        True,
        False,
        True,
        "runnerctl: inc-1: sick (disk)",
    )
    jenkins.uncordon("linux-02")
    jenkins.uncordon("linux-02")
    assert not jenkins.state("linux-02").cordoned
    assert fake.calls(methods=("GET", "POST")) == [
        "GET /computer/linux-02/api/json",
        "POST /computer/linux-02/changeOfflineCause",
        "POST /computer/linux-02/changeOfflineCause",
        "GET /computer/linux-02/api/json",
        "GET /computer/linux-02/api/json",
        "POST /computer/linux-02/toggleOffline",
        "GET /computer/linux-02/api/json",
        "GET /computer/linux-02/api/json",
    ]
    cordon = next(r for r in fake.requests if r.path.endswith("changeOfflineCause"))
    assert cordon.arg("offlineMessage") == "runnerctl: inc-1: sick (disk)"
    assert "jenkins-crumb" not in cordon.headers  # ApiCrumbExclusion: a token needs no crumb
    assert fake.calls(methods=("GET",), under="/crumbIssuer") == []


def test_a_password_needs_a_crumb_bound_to_the_session(fake: FakeJenkins) -> None:
    jenkins = provider(fake, api_token=None, password=PASSWORD)
    jenkins.cordon("linux-01", "maintenance")
    jenkins.cordon("linux-01", "maintenance")
    fake.sessions.clear()  # Jenkins restarted: the session and its crumb are gone
    jenkins.uncordon("linux-01")
    assert fake.calls(methods=("GET", "POST")) == [
        "GET /crumbIssuer/api/json",
        "POST /computer/linux-01/changeOfflineCause",
        "POST /computer/linux-01/changeOfflineCause",
        "GET /computer/linux-01/api/json",
        "POST /computer/linux-01/toggleOffline",  # 403 No valid crumb
        "GET /crumbIssuer/api/json",
        "POST /computer/linux-01/toggleOffline",
    ]
    assert not fake.nodes["linux-01"].temporarily_offline


def test_no_crumb_is_a_rejection_naming_it(fake: FakeJenkins) -> None:
    fake.password = "changed"  # a session the server never grants a crumb for
    jenkins = provider(fake, api_token=None, password=PASSWORD)
    with pytest.raises(ProviderRejected, match="HTTP 401"):
        jenkins.cordon("linux-01", "x")


def test_unknown_node_and_built_in(fake: FakeJenkins) -> None:
    jenkins = provider(fake)
    with pytest.raises(RunnerNotFound, match="node linux-09 not found"):
        jenkins.state("linux-09")
    assert jenkins.state("built-in").online
    assert fake.calls(methods=("GET",))[-1] == "GET /computer/(built-in)/api/json"


def test_rerun_follows_the_queue_item_to_the_build(fake: FakeJenkins) -> None:
    jenkins = provider(fake)
    fake.nodes["linux-02"].temporarily_offline = True
    rerun = jenkins.rerun(JobRef("folder/lib-tests#3"))
    assert rerun.id.startswith("folder/lib-tests#queue-")
    assert fake.calls() == ["POST /job/folder/job/lib-tests/build"]
    assert jenkins.job_outcome(rerun) in ("pending", "passed")
    fake.wait_for("the build", fake.idle)
    assert jenkins.job_outcome(rerun) == "passed"
    fake.forget_left_items()  # minutes later: found through the builds' queueId instead
    assert jenkins.job_outcome(rerun) == "passed"
    assert jenkins.job_outcome(JobRef("folder/lib-tests#1")) == "passed"


def test_poll_from_now_then_each_finished_build_once(fake: FakeJenkins) -> None:
    jenkins = provider(fake)
    fake.enqueue("app-tests")
    fake.wait_for("an old build", fake.idle)
    events, cursor = jenkins.poll(None)
    assert events == [] and json.loads(cursor or "") == {
        "app-tests": {"next": 2, "open": []},
        "folder/lib-tests": {"next": 1, "open": []},
    }
    for job in ("app-tests", "app-tests", "folder/lib-tests"):
        fake.enqueue(job)
    fake.wait_for("the builds", fake.idle)
    events, cursor = jenkins.poll(cursor)
    ran = {
        f"{job}#{b.number}": b.node for node in ("linux-01", "linux-02") for job, b in fake.builds_on(node)
    }
    assert sorted((e.job.id, e.state, e.runner.id if e.runner else None) for e in events) == [
        (job_id, "failed" if ran[job_id] == "linux-02" else "passed", ran[job_id])
        for job_id in ("app-tests#2", "app-tests#3", "folder/lib-tests#1")
    ]
    failed = next(e for e in events if e.state == "failed" and e.name == "app-tests")
    assert [(t.test_id, t.outcome.value, t.job_id) for t in failed.tests] == [
        ("tests.test_io::test_read", "failed", failed.job.id),
        ("tests.test_io::test_write", "failed", failed.job.id),
    ]
    assert failed.tests[0].message == "OSError: [Errno 28] No space left on device"
    assert failed.rerun_ids[0].startswith("app-tests#queue-")
    again, _ = jenkins.poll(cursor)
    assert again == []


def test_a_build_still_running_is_reported_when_it_finishes(fake: FakeJenkins) -> None:
    jenkins = provider(fake, jobs=["app-tests"])
    _, cursor = jenkins.poll(None)
    fake.run_s = 0.5
    fake.enqueue("app-tests")
    fake.wait_for("a build to start", lambda: fake.jobs["app-tests"].builds)
    events, cursor = jenkins.poll(cursor)
    assert events == [] and json.loads(cursor or "")["app-tests"] == {"next": 2, "open": [1]}
    fake.wait_for("it to finish", fake.idle)
    events, cursor = jenkins.poll(cursor)
    assert [e.job.id for e in events] == ["app-tests#1"]
    assert json.loads(cursor or "")["app-tests"] == {"next": 2, "open": []}


def test_credentials_never_in_repr() -> None:
    jenkins = JenkinsProvider("http://127.0.0.1:1/", username=USER, password=PASSWORD)
    assert PASSWORD not in repr(jenkins) and PASSWORD not in repr(jenkins.http)


def test_polled_builds_become_job_records(fake: FakeJenkins) -> None:
    fake.add_job("no-report", [])  # publishes no JUnit report: how many tests ran is unknown
    jenkins = provider(fake, jobs=["app-tests", "no-report"])
    _, cursor = jenkins.poll(None)
    for job in ("app-tests", "app-tests", "no-report"):
        fake.enqueue(job)
    fake.wait_for("the builds", fake.idle)
    events, _ = jenkins.poll(cursor)
    records = {r.job_id: r for r in records_of("jenkins", events)}
    ran = {f"{job}#{b.number}": node for node in ("linux-01", "linux-02") for job, b in fake.builds_on(node)}
    assert sorted(records) == sorted(ran)
    for job_id, record in records.items():
        sick = ran[job_id] == "linux-02"
        expected = ("failure", "UNSTABLE") if sick else ("success", None)
        assert (record.conclusion.value, record.failure_reason, record.runner.id) == (*expected, ran[job_id])
        assert record.tests == (None if job_id == "no-report#1" else 2)
        assert record.started is not None and record.started <= record.finished
