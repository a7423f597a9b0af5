"""The GitLab provider against GitLab's own examples (the docs' Job Hook, go-gitlab's capture) and the
fake GitLab on loopback: the exact calls a pause, an unpause and a retry make."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.errors import ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.ingest.jobs import records_of
from controller.providers.base import JobRef, PayloadInvalid, WebhookRejected
from controller.providers.gitlab import GitLabProvider
from tests.fakes.gitlab import FakeGitLab

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "providers" / "gitlab"
HOOK = {"x-gitlab-event": "Job Hook"}


@pytest.fixture
def fake() -> Iterator[FakeGitLab]:
    fake = FakeGitLab(token="glpat-test", webhook_secret="s3cret")
    fake.start()
    fake.add_runner(101, "gl-1", ["linux", "docker"])
    fake.add_runner(102, "gl-2", ["linux", "docker"])
    try:
        yield fake
    finally:
        fake.stop()


def provider(fake: FakeGitLab) -> GitLabProvider:
    return GitLabProvider(
        token="glpat-test", webhook_secret="s3cret", api_url=fake.url + "/api/v4", timeout_s=5
    )


def test_the_docs_job_hook_and_gitlab_com_times_parse(fake: FakeGitLab) -> None:
    gl = provider(fake)
    (docs,) = gl.job_events(HOOK, (FIXTURES / "job_hook.docs.json").read_bytes()) or []
    assert (docs.job.id, docs.job.run_id, docs.name, docs.state, docs.attempt) == (
        "380/1977",
        "380/2366",
        "test",
        "queued",  # build_status "created"
        3,
    )
    assert docs.runner is not None
    assert (docs.runner.id, docs.runner.name, docs.runner.labels) == (
        "380987",
        "shared-runners-manager-6.gitlab.com",
        ("linux", "docker"),
    )
    assert docs.time.isoformat() == "2021-02-23T02:41:37+00:00"
    (com,) = gl.job_events(HOOK, (FIXTURES / "job_hook.go-gitlab.json").read_bytes()) or []
    assert (com.state, com.job.id, com.time.isoformat()) == (
        "passed",
        "31537070/3580121225",
        "2023-01-10T13:50:54+00:00",
    )


def test_token_header_and_other_events(fake: FakeGitLab) -> None:
    gl = provider(fake)
    gl.verify({"x-gitlab-token": "s3cret"}, b"{}", 0.0)
    with pytest.raises(WebhookRejected, match="not the configured"):
        gl.verify({"x-gitlab-token": "s3cret "}, b"{}", 0.0)
    with pytest.raises(WebhookRejected, match="no X-Gitlab-Token"):
        gl.verify({}, b"{}", 0.0)
    assert gl.job_events({"x-gitlab-event": "Pipeline Hook"}, b"{}") is None
    with pytest.raises(PayloadInvalid, match="object_kind"):
        gl.job_events(HOOK, json.dumps({"object_kind": "pipeline"}).encode())
    assert gl.delivery_id({"idempotency-key": "k", "x-gitlab-event-uuid": "u"}, b"") == "k"
    assert gl.delivery_id({"x-gitlab-event-uuid": "u"}, b"") == "u"


def test_cordon_pauses_with_a_note_and_uncordon_restores_the_persons_note(fake: FakeGitLab) -> None:
    gl = provider(fake)
    fake.runners[101].maintenance_note = "disk replaced in May"
    gl.cordon("101", "runnerctl: inc-1: sick (disk)")
    assert fake.calls() == ["PUT /api/v4/runners/101"]
    assert fake.bodies("PUT", "/api/v4/runners/101") == [
        {"paused": "true", "maintenance_note": "runnerctl: inc-1: sick (disk)\ndisk replaced in May"}
    ]
    state = gl.state("101")
    assert state.cordoned and state.reason is not None and state.reason.startswith("runnerctl: inc-1")
    gl.uncordon("101")
    assert fake.bodies("PUT", "/api/v4/runners/101")[1] == {
        "paused": "false",
        "maintenance_note": "disk replaced in May",
    }
    assert (fake.runners[101].paused, fake.runners[101].maintenance_note) == (False, "disk replaced in May")
    assert "glpat-test" not in repr(gl)


def test_errors(fake: FakeGitLab) -> None:
    gl = provider(fake)
    with pytest.raises(RunnerNotFound, match="not a GitLab runner id"):
        gl.state("gl-1")
    with pytest.raises(RunnerNotFound, match="404"):
        gl.state("999")
    with pytest.raises(ProviderRejected, match="401"):
        GitLabProvider("wrong", "s", api_url=fake.url + "/api/v4").state("101")
    fake.limited, fake.retry_after = 10, "0"
    with pytest.raises(ProviderUnavailable) as limited:
        gl.state("101")
    assert limited.value.retry_after == 0.0 and fake.limited == 6  # the first try and 3 retries


def test_retry_answers_the_new_job(fake: FakeGitLab) -> None:
    gl = provider(fake)
    fake.start_ticking(0.02)
    fake.fails_on = {"gl-1"}
    job = fake.queue("rspec 1/2", ["linux"], pin="gl-1")
    fake.wait_idle()
    assert gl.job_outcome(JobRef(fake.job_id(job))) == "failed"
    fake.runners[101].paused = True
    new = gl.rerun(JobRef(fake.job_id(job)))
    assert new.id != fake.job_id(job) and new.run_id == str(job.pipeline_id)
    assert fake.calls() == [f"POST /api/v4/projects/380/jobs/{job.id}/retry"]
    fake.wait_idle()
    assert gl.job_outcome(new) == "passed"
    assert fake.jobs[int(new.id.split("/")[1])].runner is fake.runners[102]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, ("success", None)),  # its build_failure_reason "unknown_failure" counts only on failure
        ({"build_status": "failed", "build_failure_reason": "script_failure"}, ("failure", "script_failure")),
        (
            {"build_status": "failed", "build_failure_reason": "runner_system_failure"},
            ("system_failure", "runner_system_failure"),
        ),
        (
            {"build_status": "failed", "build_failure_reason": "stuck_or_timeout_failure"},
            ("timed_out", "stuck_or_timeout_failure"),
        ),
        (
            {"build_status": "failed", "build_failure_reason": "job_execution_timeout"},
            ("timed_out", "job_execution_timeout"),
        ),
        ({"build_status": "canceled"}, ("cancelled", None)),
        ({"build_status": "skipped"}, None),
        ({"build_status": "running", "build_finished_at": None}, None),
    ],
    ids=[
        "published-success",
        "script",
        "runner-system",
        "stuck-or-timeout",
        "timeout",
        "canceled",
        "skipped",
        "running",
    ],
)
def test_the_published_job_hook_becomes_a_job_record(
    fake: FakeGitLab, change: dict[str, object], expected: tuple[str, str | None] | None
) -> None:
    body = json.loads((FIXTURES / "job_hook.go-gitlab.json").read_text()) | change
    records = records_of("gitlab", provider(fake).job_events(HOOK, json.dumps(body).encode()) or [])
    if expected is None:
        assert records == []
        return
    (record,) = records
    assert (record.conclusion.value, record.failure_reason) == expected
    assert (record.job_id, record.run_id, record.attempt, record.name, record.failed_step) == (
        "31537070/3580121225",
        "31537070/743121198",
        2,
        "auto_deploy:start",
        None,  # GitLab names no step
    )
    assert record.started is not None and record.started.isoformat() == "2023-01-10T13:50:05+00:00"
    assert record.finished.isoformat() == "2023-01-10T13:50:54+00:00"
    assert (record.runner.id, record.runner.provider, record.tests) == ("12270837", "gitlab", None)


def test_the_docs_job_hook_of_a_created_job_is_no_record(fake: FakeGitLab) -> None:
    body = (FIXTURES / "job_hook.docs.json").read_bytes()
    assert records_of("gitlab", provider(fake).job_events(HOOK, body) or []) == []
