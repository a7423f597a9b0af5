"""The GitHub provider against GitHub's own examples (signature test vector, octokit payloads) and the
fake GitHub on loopback: the exact calls a cordon, an uncordon and a rerun make, and rate limits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from controller.db.engine import make_engine
from controller.db.schema import migrate
from controller.errors import ProviderRejected, ProviderUnavailable, RunnerNotFound
from controller.ingest.jobs import records_of
from controller.providers.base import JobRef, PayloadInvalid, WebhookRejected
from controller.providers.github import GitHubProvider, signature
from controller.providers.memory import RunnerMemory
from tests.fakes.github import FakeGitHub

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "providers" / "github"
RUNNERS = "/repos/acme/web/actions/runners"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    migrate(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    fake = FakeGitHub("acme", "web", token="ghp_test", webhook_secret="s3cret")
    fake.start()
    fake.add_runner("gh-1", ["linux-x64", "gpu"])
    fake.add_runner("gh-2", ["linux-x64"])
    try:
        yield fake
    finally:
        fake.stop()


def provider(fake: FakeGitHub, engine: Engine, secret: str = "s3cret") -> GitHubProvider:
    return GitHubProvider(
        token="ghp_test",
        webhook_secret=secret,
        owner="acme",
        repo="web",
        api_url=fake.url,
        timeout_s=5,
        memory=RunnerMemory(engine, "github"),
    )


def test_the_docs_signature_test_vector() -> None:
    # github/docs, content/webhooks/using-webhooks/validating-webhook-deliveries.md
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature(b"It's a Secret to Everybody", b"Hello, World!") == expected


def test_verify_accepts_the_vector_and_rejects_anything_else(fake: FakeGitHub, engine: Engine) -> None:
    gh = provider(fake, engine, secret="It's a Secret to Everybody")
    good = {"x-hub-signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}
    gh.verify(good, b"Hello, World!", 0.0)
    with pytest.raises(WebhookRejected, match="does not match"):
        gh.verify(good, b"Hello, World?", 0.0)
    with pytest.raises(WebhookRejected, match="no X-Hub-Signature-256"):
        gh.verify({}, b"Hello, World!", 0.0)
    with pytest.raises(WebhookRejected, match="does not match"):
        gh.verify({"x-hub-signature-256": "sha256=é"}, b"Hello, World!", 0.0)


def test_octokit_examples_parse(fake: FakeGitHub, engine: Engine) -> None:
    gh = provider(fake, engine)
    headers = {"x-github-event": "workflow_job"}
    (failed,) = gh.job_events(headers, (FIXTURES / "workflow_job.completed.failure.json").read_bytes()) or []
    assert (failed.job.id, failed.job.run_id, failed.name) == (
        "Codertocat/Hello-World/289782451",
        "Codertocat/Hello-World/2202229078",
        "linters",
    )
    assert (failed.state, failed.attempt, failed.rerun_ids) == ("failed", 1, ())
    assert failed.runner is not None and (failed.runner.id, failed.runner.provider) == (
        "GitHub Actions 5",
        "github",
    )
    assert failed.time.isoformat() == "2021-08-05T10:38:16+00:00"
    (waiting,) = gh.job_events(headers, (FIXTURES / "workflow_job.waiting.json").read_bytes()) or []
    assert (waiting.state, waiting.runner) == ("queued", None)
    (running,) = gh.job_events(headers, (FIXTURES / "workflow_job.in_progress.json").read_bytes()) or []
    assert running.state == "running"


def test_a_second_attempt_names_the_rerun_it_settles(fake: FakeGitHub, engine: Engine) -> None:
    body = json.loads((FIXTURES / "workflow_job.completed.failure.json").read_text())
    body["workflow_job"] |= {"run_attempt": 2, "conclusion": "success"}
    (event,) = (
        provider(fake, engine).job_events({"x-github-event": "workflow_job"}, json.dumps(body).encode()) or []
    )
    assert event.state == "passed"
    assert event.rerun_ids == ("Codertocat/Hello-World/runs/2202229078/attempts/2/linters",)


def test_other_events_are_ignored_and_garbage_is_refused(fake: FakeGitHub, engine: Engine) -> None:
    gh = provider(fake, engine)
    assert gh.job_events({"x-github-event": "ping"}, b'{"zen": "Keep it logically awesome."}') is None
    with pytest.raises(PayloadInvalid, match="not a workflow_job"):
        gh.job_events({"x-github-event": "workflow_job"}, b'{"action": "completed"}')
    assert gh.delivery_id({"x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, b"") == (
        "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    )


def test_cordon_takes_the_custom_labels_off_and_uncordon_puts_exactly_them_back(
    fake: FakeGitHub, engine: Engine
) -> None:
    gh = provider(fake, engine)
    assert gh.state("gh-1").cordoned is False
    gh.cordon("gh-1", "runnerctl: inc-1: sick (disk)")
    assert fake.calls() == [f"PUT {RUNNERS}/1/labels"]
    assert fake.bodies("PUT", f"{RUNNERS}/1/labels") == [{"labels": []}]
    assert fake.runner("gh-1").custom == []
    state = gh.state("gh-1")
    assert (state.cordoned, state.reason) == (True, "runnerctl: inc-1: sick (disk)")
    gh.cordon("gh-1", "runnerctl: inc-1: sick (disk)")  # again (a retry after a crash): nothing to remove
    assert fake.calls() == [f"PUT {RUNNERS}/1/labels"]
    fake.runner("gh-1").custom.append("added-meanwhile")  # a person's change while cordoned is kept
    gh.uncordon("gh-1")
    assert fake.calls() == [f"PUT {RUNNERS}/1/labels"] * 2
    assert fake.bodies("PUT", f"{RUNNERS}/1/labels")[1] == {"labels": ["linux-x64", "gpu", "added-meanwhile"]}
    assert gh.state("gh-1").cordoned is False
    gh.uncordon("gh-1")  # idempotent: nothing of ours left to restore
    assert len(fake.calls()) == 2
    assert "ghp_test" not in repr(gh) and "s3cret" not in repr(gh)


def test_unknown_runner_and_bad_token(fake: FakeGitHub, engine: Engine) -> None:
    with pytest.raises(RunnerNotFound, match="no self-hosted runner named 'nope'"):
        provider(fake, engine).state("nope")
    wrong = GitHubProvider("bad", "s", "acme", "web", api_url=fake.url, memory=RunnerMemory(engine, "github"))
    with pytest.raises(ProviderRejected, match="401"):
        wrong.state("gh-1")


def test_rate_limits_say_when_to_come_back(fake: FakeGitHub, engine: Engine) -> None:
    gh = provider(fake, engine)
    fake.limited = ["primary"]
    with pytest.raises(ProviderUnavailable, match="rate limited") as primary:
        gh.state("gh-1")
    assert primary.value.retry_after is not None and 0 <= primary.value.retry_after <= 3
    fake.limited = ["secondary"]  # 403 with Retry-After: not retried here, remediation backs off
    with pytest.raises(ProviderUnavailable, match="rate limited") as secondary:
        gh.state("gh-1")
    assert secondary.value.retry_after == 1.0
    fake.limited = []
    assert gh.state("gh-1").online


def test_rerun_of_the_latest_attempt_and_its_outcome(fake: FakeGitHub, engine: Engine) -> None:
    gh = provider(fake, engine)
    fake.start_ticking(0.02)
    fake.fails_on = {"gh-1"}
    job = fake.queue("test (linux)", ["self-hosted", "gpu"])
    fake.wait_idle()
    first = fake.job_id(job)
    assert gh.job_outcome(JobRef(first)) == "failed"
    fake.fails_on = set()
    new = gh.rerun(JobRef(first))
    assert new.id == f"acme/web/runs/{job.run_id}/attempts/2/test (linux)"
    assert fake.calls() == [f"POST /repos/acme/web/actions/jobs/{job.id}/rerun"]
    fake.wait_idle()
    assert gh.job_outcome(new) == "passed"
    with pytest.raises(ProviderRejected, match="403"):  # an older attempt cannot be rerun
        gh.rerun(JobRef(first))


# The published example's one step, as it is (a success).
FIRST_STEP = json.loads((FIXTURES / "workflow_job.completed.failure.json").read_text())["workflow_job"][
    "steps"
][0]
FAILED_STEP = {"name": "Run tests", "status": "completed", "conclusion": "failure", "number": 2}
SKIPPED_STEP = {"name": "Upload", "status": "completed", "conclusion": "skipped", "number": 3}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, ("failure", None)),
        ({"steps": [FIRST_STEP, FAILED_STEP, SKIPPED_STEP]}, ("failure", "Run tests")),
        (
            {"conclusion": "timed_out", "steps": [FIRST_STEP, FAILED_STEP | {"conclusion": "timed_out"}]},
            ("timed_out", "Run tests"),
        ),
        ({"conclusion": "cancelled"}, ("cancelled", None)),
        ({"conclusion": "success"}, ("success", None)),
        ({"conclusion": "skipped"}, None),
        ({"status": "in_progress", "conclusion": None, "completed_at": None}, None),
    ],
    ids=["published-failure", "failed-step", "timed-out", "cancelled", "success", "skipped", "in-progress"],
)
def test_the_published_completed_job_becomes_a_job_record(
    fake: FakeGitHub, engine: Engine, change: dict[str, object], expected: tuple[str, str | None] | None
) -> None:
    body = json.loads((FIXTURES / "workflow_job.completed.failure.json").read_text())
    body["workflow_job"] |= change
    events = provider(fake, engine).job_events({"x-github-event": "workflow_job"}, json.dumps(body).encode())
    records = records_of("github", events or [])
    if expected is None:
        assert records == []
        return
    (record,) = records
    assert (record.conclusion.value, record.failed_step) == expected
    assert (record.job_id, record.run_id, record.attempt, record.name) == (
        "Codertocat/Hello-World/289782451",
        "Codertocat/Hello-World/2202229078",
        1,
        "linters",
    )
    assert (record.started.isoformat() if record.started else None, record.finished.isoformat()) == (
        "2021-08-05T10:34:58+00:00",
        "2021-08-05T10:38:16+00:00",
    )
    assert (record.runner.id, record.runner.provider, record.failure_reason, record.tests) == (
        "GitHub Actions 5",
        "github",
        None,  # GitHub gives no reason beyond the conclusion
        None,  # nor a count of tests
    )
