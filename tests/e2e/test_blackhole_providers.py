"""A black-hole runner (issue 48) through each provider's own webhook or poll, on real processes: a real
controller (SQLite, auto mode) takes in signed deliveries built from the published example payloads in
tests/fixtures/providers/ — only ids, runner names, times and conclusion fields changed — and must name
the one runner whose jobs die in seconds at set-up sick from its job records alone, within three of
them, and cordon it (and nothing else) through the provider's API (the fakes in tests/fakes/).

The pool: three runners running one job name for minutes, passing mostly, some failing from a flaky
test; where the provider brings no JUnit (GitHub, GitLab, Buildkite), their test results are posted
over /v1/results as a JUnit upload would, so their jobs "report tests". The black hole's jobs:

- GitHub `workflow_job`: `conclusion: failure`, its first step ("Set up job") failed, no tests. GitHub
  names no infrastructure failure, so this is a failure without tests, short beside its peers'.
- GitLab Job Hook: `build_status: failed`, `build_failure_reason: runner_system_failure`.
- Buildkite `job.finished`: `state: failed`, `exit_status: -1` (the agent lifecycle docs' "lost
  contact with the agent"), `signal_reason: process_run_error` (GraphQL's JobEventSignalReason: "unable
  to start the job process"). The docs elide the webhook's `job` and say it is the REST Job, whose
  example (`jobs.md`) carries both fields; that the webhook carries them too is that statement's word,
  not a published webhook body (docs/providers.md).
- Jenkins (polled, no webhooks in core): `result: FAILURE` within seconds, no JUnit report published.

Built for speed: no agent readings (the job outcomes are the only evidence), reruns off
(`max_reruns_per_job: 0`) since the fakes never ran these jobs; a few seconds a provider.
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.e2e.provider_story import FAST_AUTO, sick_incident, wait_for
from tests.fakes.buildkite import ORG, FakeBuildkite, signature
from tests.fakes.github import FakeGitHub
from tests.fakes.gitlab import FakeGitLab
from tests.fakes.jenkins import FakeJenkins
from tests.servers import REPO, Controller, database, runnerctl_cmd, running_controller

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "providers"
SECRET = "bh-webhook-s3cret"
TOKEN = "bh-api-token"
TESTS = ("test_login", "test_logout", "test_search")
FLAKY_TEST = "test_search"
PEER_JOBS = 8
# (peer, job) pairs whose flaky test fails: one each on two peers, never twice on one runner.
FLAKY = {(0, 3), (1, 5)}
SETUP_JOBS = 3
SETUP_S = 5


def fixture(path: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((FIXTURES / path).read_text())
    return found


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Job:
    number: int  # unique in the story: every provider id is made from it
    runner: str
    started: datetime
    finished: datetime
    kind: str  # passed | flaky (a test failed) | setup (died at set-up, no test ran)

    @property
    def failed(self) -> bool:
        return self.kind != "passed"


def timeline(runners: tuple[str, ...]) -> list[Job]:
    """The last hour of the pool, in the order the jobs finished: the peers' jobs of four to five
    minutes back to back, the black hole's (the last runner) dying in seconds among them. Real times,
    so the controller's horizon holds them; to the second, as providers stamp them."""
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    jobs: list[Job] = []
    number = 1000
    for p, runner in enumerate(runners[:-1]):
        t = t0 + timedelta(seconds=40 * p)
        for k in range(PEER_JOBS):
            duration = timedelta(seconds=240 + 30 * ((k + p) % 3))
            jobs.append(Job(number, runner, t, t + duration, "flaky" if (p, k) in FLAKY else "passed"))
            number += 1
            t += duration + timedelta(seconds=60)
    for k in range(SETUP_JOBS):
        start = t0 + timedelta(minutes=8 + 12 * k)
        jobs.append(Job(number, runners[-1], start, start + timedelta(seconds=SETUP_S), "setup"))
        number += 1
    return sorted(jobs, key=lambda j: (j.finished, j.number))


class Story:
    """One provider: its fake (for the cordon), the controller's configuration of it, and its jobs as
    that provider delivers them."""

    name: str
    pool: str
    runners: tuple[str, ...]  # runner ids as the controller names them; the last is the black hole
    job_name: str  # the fixture's own job name, kept
    brings_tests = False  # the provider's own JUnit comes with the job (Jenkins)

    def start(self) -> dict[str, Any]:
        """Start the fake; the controller's provider configuration."""
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def ready(self, controller: Controller) -> None:
        """Return once deliveries can be taken in."""

    def deliver(self, controller: Controller, job: Job) -> None:
        raise NotImplementedError

    def job_id(self, job: Job) -> str:
        raise NotImplementedError

    def identity(self, runner: str) -> dict[str, Any]:
        return {"id": runner, "name": runner, "provider": self.name}

    def cordoned(self) -> set[str]:
        """The runners the provider itself says are out of rotation."""
        raise NotImplementedError


def _posted(answer: requests.Response) -> None:
    assert answer.status_code == 200, answer.text


class GitHubStory(Story):
    name, pool, job_name = "github", "default", "linters"
    runners = ("gh-1", "gh-2", "gh-3", "gh-4")

    def start(self) -> dict[str, Any]:
        self.fake = FakeGitHub("acme", "web", token=TOKEN, webhook_secret=SECRET)
        self.fake.start()
        for name in self.runners:
            self.fake.add_runner(name, ["linux-x64"])
        repo = {"owner": "acme", "repo": "web", "webhook_secret": SECRET}
        return {"github": {"api_url": self.fake.url, "token": TOKEN} | repo}

    def stop(self) -> None:
        self.fake.stop()

    def deliver(self, controller: Controller, job: Job) -> None:
        body = fixture("github/workflow_job.completed.failure.json")
        found = body["workflow_job"]
        step = found["steps"][0]  # "Set up job": the one step the trimmed example keeps
        setup_end = job.finished if job.kind == "setup" else job.started + timedelta(seconds=3)
        step.update(
            conclusion="failure" if job.kind == "setup" else "success",
            started_at=iso(job.started),
            completed_at=iso(setup_end),
        )
        found.update(
            id=job.number,
            run_id=job.number + 500_000,
            conclusion="failure" if job.failed else "success",
            created_at=iso(job.started - timedelta(seconds=20)),
            started_at=iso(job.started),
            completed_at=iso(job.finished),
            runner_id=self.runners.index(job.runner) + 1,
            runner_name=job.runner,
        )
        data = json.dumps(body).encode()
        url = f"{controller.url}/v1/webhooks/github"
        _posted(requests.post(url, data=data, headers=self.fake.headers(data), timeout=30))

    def job_id(self, job: Job) -> str:
        # The example's repository, as published: job ids are `<full_name>/<id>`.
        return f"Codertocat/Hello-World/{job.number}"

    def cordoned(self) -> set[str]:
        return {name for name in self.runners if not self.fake.runner(name).custom}


class GitLabStory(Story):
    name, pool, job_name = "gitlab", "default", "test"
    runners = ("101", "102", "103", "104")

    def start(self) -> dict[str, Any]:
        self.fake = FakeGitLab(token=TOKEN, webhook_secret=SECRET)
        self.fake.start()
        for runner in self.runners:
            self.fake.add_runner(int(runner), f"gl-{runner}", ["linux", "docker"])
        return {"gitlab": {"api_url": self.fake.url + "/api/v4", "token": TOKEN, "webhook_secret": SECRET}}

    def stop(self) -> None:
        self.fake.stop()

    def identity(self, runner: str) -> dict[str, Any]:
        return {"id": runner, "name": f"gl-{runner}", "provider": self.name}

    def deliver(self, controller: Controller, job: Job) -> None:
        body = fixture("gitlab/job_hook.docs.json")
        created = job.started - timedelta(seconds=20)
        reason = {"passed": "unknown_failure", "flaky": "script_failure", "setup": "runner_system_failure"}
        body.update(
            build_id=job.number,
            build_status="failed" if job.failed else "success",
            build_created_at=iso(created),
            build_started_at=iso(job.started),
            build_finished_at=iso(job.finished),
            build_created_at_iso=iso(created),
            build_started_at_iso=iso(job.started),
            build_finished_at_iso=iso(job.finished),
            build_duration=(job.finished - job.started).total_seconds(),
            build_failure_reason=reason[job.kind],
            pipeline_id=job.number + 500_000,
        )
        body["runner"].update(id=int(job.runner), description=f"gl-{job.runner}")
        url = f"{controller.url}/v1/webhooks/gitlab"
        _posted(requests.post(url, data=json.dumps(body).encode(), headers=self.fake.headers(), timeout=30))

    def job_id(self, job: Job) -> str:
        return f"{fixture('gitlab/job_hook.docs.json')['project_id']}/{job.number}"

    def cordoned(self) -> set[str]:
        return {runner for runner in self.runners if self.fake.runners[int(runner)].paused}


class BuildkiteStory(Story):
    name, pool, job_name = "buildkite", "linux", "build"
    runners = ("bk-1", "bk-2", "bk-3", "bk-4")

    def start(self) -> dict[str, Any]:
        self.fake = FakeBuildkite(TOKEN, SECRET)
        self.fake.start()
        for name in self.runners:
            self.fake.add_agent(name)
        return {
            "buildkite": {
                "org": ORG,
                "token": TOKEN,
                "webhook_token": SECRET,
                "url": f"{self.fake.url}/v2",
                "graphql_url": f"{self.fake.url}/graphql/v1",
                "pool": self.pool,
                "timeout_s": 5,
            }
        }

    def stop(self) -> None:
        self.fake.stop()

    def identity(self, runner: str) -> dict[str, Any]:
        return super().identity(runner) | {"pool": self.pool}

    def deliver(self, controller: Controller, job: Job) -> None:
        found = fixture("buildkite/job.json")
        created = iso(job.started - timedelta(seconds=20))
        conclusion: dict[str, Any] = {
            "passed": {"state": "passed", "exit_status": 0, "signal_reason": None},
            "flaky": {"state": "failed", "exit_status": 1, "signal_reason": None},
            "setup": {"state": "failed", "exit_status": -1, "signal_reason": "process_run_error"},
        }[job.kind]
        agent = self.fake.agent(job.runner)
        found.update(
            id=self.job_id(job),
            created_at=created,
            scheduled_at=created,
            runnable_at=created,
            started_at=iso(job.started),
            finished_at=iso(job.finished),
            agent=found["agent"] | {"id": agent.id, "name": agent.name},
            **conclusion,
        )
        body = {
            # The shape job_events.md gives, each object the REST one (tests/fixtures/providers/buildkite).
            "event": "job.finished",
            "job": found,
            "build": fixture("buildkite/build.json") | {"number": job.number},
            "pipeline": fixture("buildkite/pipeline.json"),
            "sender": {"id": "8a7693f8-dbae-4783-9137-84090fce9045", "name": "Some Person"},
        }
        data = json.dumps(body).encode()
        headers = {
            "Content-Type": "application/json",
            "X-Buildkite-Event": "job.finished",
            "X-Buildkite-Signature": signature(SECRET, data, int(time.time())),
        }
        _posted(
            requests.post(f"{controller.url}/v1/webhooks/buildkite", data=data, headers=headers, timeout=30)
        )

    def job_id(self, job: Job) -> str:
        return f"b63254c0-3271-4a98-8270-{job.number:012d}"

    def cordoned(self) -> set[str]:
        return {name for name in self.runners if self.fake.agent(name).paused}


class JenkinsStory(Story):
    name, pool, job_name = "jenkins", "linux", "unit-tests"
    runners = ("linux-01", "linux-02", "linux-03", "linux-04")
    brings_tests = True

    def start(self) -> dict[str, Any]:
        self.fake = FakeJenkins("runnerctl", TOKEN, "unused-password")
        self.fake.start()
        for name in self.runners:
            self.fake.add_node(name)
        self.fake.add_job(self.job_name, [f"tests.test_app.{t}" for t in TESTS])
        self.numbers: dict[int, int] = {}
        return {
            "jenkins": {
                "url": self.fake.url,
                "username": "runnerctl",
                "api_token": TOKEN,
                "jobs": [self.job_name],
                "pool": self.pool,
                "timeout_s": 5,
            }
        }

    def stop(self) -> None:
        self.fake.stop()

    def ready(self, controller: Controller) -> None:
        # The first poll marks "now": builds from before it are not history to judge.
        def polled() -> bool:
            with database(controller.db) as conn:
                sql = "SELECT count(*) FROM poll_cursors WHERE provider = 'jenkins'"
                return bool(conn.exec_driver_sql(sql).scalar())

        wait_for(controller, "the first poll", polled)

    def identity(self, runner: str) -> dict[str, Any]:
        return super().identity(runner) | {"pool": self.pool}

    def deliver(self, controller: Controller, job: Job) -> None:
        cases = []
        if job.kind != "setup":  # the JUnit publisher's report; a build dead at set-up publishes none
            template = fixture("jenkins/test_report.json")["suites"][0]["cases"][0]
            for test in TESTS:
                failed = job.kind == "flaky" and test == FLAKY_TEST
                cases.append(
                    copy.deepcopy(template)
                    | {
                        "className": "tests.test_app",
                        "name": test,
                        "status": "FAILED" if failed else "PASSED",
                    }
                )
        # The JUnit publisher marks a build with failed tests UNSTABLE; one that died before is FAILURE.
        result = {"passed": "SUCCESS", "flaky": "UNSTABLE", "setup": "FAILURE"}[job.kind]
        started_ms = int(job.started.timestamp() * 1000)
        duration_ms = int((job.finished - job.started).total_seconds() * 1000)
        build = self.fake.add_finished_build(
            self.job_name, job.runner, started_ms, duration_ms, result, cases
        )
        self.numbers[job.number] = build.number

    def job_id(self, job: Job) -> str:
        return f"{self.job_name}#{self.numbers[job.number]}"

    def cordoned(self) -> set[str]:
        return {name for name, node in self.fake.nodes.items() if node.temporarily_offline}


@contextmanager
def story_running(story: Story, tmp: Path) -> Iterator[Controller]:
    providers = story.start()
    policies = {story.pool: {"mode": "auto", "max_reruns_per_job": 0}}
    env = FAST_AUTO | {
        "RUNNER_CONTROLLER_PROVIDERS": json.dumps(providers),
        "RUNNER_CONTROLLER_REMEDIATION_POLICIES": json.dumps(policies),
    }
    try:
        with running_controller(tmp, env=env) as controller:
            story.ready(controller)
            yield controller
    finally:
        story.stop()


def post_tests(controller: Controller, story: Story, job: Job) -> None:
    """The job's JUnit results, as an upload step would post them: what a provider without JUnit of
    its own leaves to the pipeline."""
    records = [
        {
            "test_id": f"tests/test_app.py::{test}",
            "outcome": "failed" if job.kind == "flaky" and test == FLAKY_TEST else "passed",
            "time": iso(job.finished),
            "job_id": story.job_id(job),
            "runner": story.identity(job.runner),
        }
        for test in TESTS
    ]
    _posted(controller.post("/v1/results", json=records))


def stored_jobs(controller: Controller) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = controller.get("/v1/jobs", params={"limit": 1000}).json()["items"]
    return items


STORIES = [GitHubStory, GitLabStory, BuildkiteStory, JenkinsStory]


@pytest.mark.parametrize("story_type", STORIES, ids=[s.name for s in STORIES])
def test_a_runner_dying_at_set_up_is_named_from_the_providers_own_payloads(
    story_type: type[Story], tmp_path: Path
) -> None:
    story = story_type()
    hole = story.runners[-1]
    jobs = timeline(story.runners)
    with story_running(story, tmp_path) as controller:
        for job in jobs:
            story.deliver(controller, job)
            if job.kind != "setup" and not story.brings_tests:
                post_tests(controller, story, job)
        dead = [j for j in jobs if j.runner == hole]
        dead_ids = sorted(story.job_id(j) for j in dead)
        wait_for(controller, "a job record per job", lambda: len(stored_jobs(controller)) == len(jobs), 30)

        # The records carry what the provider said of the black hole's jobs.
        records = [r for r in stored_jobs(controller) if r["runner"] == hole]
        expected = {
            "github": ("failure", "Set up job", None),
            "gitlab": ("system_failure", None, "runner_system_failure"),
            "buildkite": ("system_failure", None, "process_run_error"),
            "jenkins": ("failure", None, "FAILURE"),
        }[story.name]
        assert {(r["conclusion"], r["failed_step"], r["failure_reason"]) for r in records} == {expected}

        incident = sick_incident(controller, hole, jobs=dead_ids)
        assert (incident["kind"], incident["dimension"]) == ("runner", "jobs")
        assert incident["jobs"]["early_deaths"] == SETUP_JOBS
        # Decided by one of its first three failed jobs: the finish of the job at which it crossed.
        decided = datetime.fromisoformat(incident["decided_at"].replace("Z", "+00:00"))
        assert decided in [j.finished for j in dead], (
            incident["decided_at"],
            [iso(j.finished) for j in dead],
        )

        # Nobody else: no incident on another runner, no other runner cordoned in the provider.
        incidents = controller.get("/v1/incidents").json()["items"]
        assert [(i["entity"], i["state"]) for i in incidents if i["kind"] in ("runner", "machine")] == [
            (hole, "sick")
        ]
        try:
            wait_for(controller, f"{hole} cordoned in {story.name}", lambda: story.cordoned() == {hole})
        except AssertionError as error:
            raise AssertionError(f"{error}\n--- actions: {controller.get('/v1/actions').json()}") from None
        done = controller.get("/v1/actions", params={"action": "cordon", "status": "done"}).json()["items"]
        assert {a["runner"] for a in done} == {hole}
        views = {runner: controller.get(f"/v1/runners/{runner}").json() for runner in story.runners}
        assert {r: (v["health"]["health"], v["cordon"] is not None) for r, v in views.items()} == {
            r: ("sick", True) if r == hole else ("healthy", False) for r in story.runners
        }
        assert story.cordoned() == {hole}

        # The flaky test may be called flaky; the job itself, as a test `job:<name>`, never is.
        tests = controller.get("/v1/tests", params={"all": "true"}).json()["items"]
        assert any(t["test_id"].endswith(FLAKY_TEST) for t in tests)
        assert not [t for t in tests if t["test_id"].startswith("job:") and t["verdict"] != "healthy"]

        listed = subprocess.run(
            runnerctl_cmd(
                "--server",
                controller.url,
                "--token",
                controller.admin_token,
                "get",
                "jobs",
                "-l",
                f"runner={hole}",
            ),
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        assert sorted(line.split()[0] for line in listed.stdout.splitlines()[1:]) == dead_ids, listed.stdout
