"""Job records over real HTTP into a real controller, on both databases: each provider's published
payload stored as the job record it is (once, however often it is delivered), then listed by
GET /v1/jobs and counted in the runner's job statistics."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.controller.api.test_jobs_ingest import job
from tests.fakes.buildkite import fixture as buildkite_fixture
from tests.servers import Controller, running_controller

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "providers"
SECRET = "hook-s3cret"
PROVIDERS = {
    "github": {
        "token": "t",
        "webhook_secret": SECRET,
        "owner": "o",
        "repo": "r",
        "api_url": "http://127.0.0.1:9",
    },
    "gitlab": {"token": "t", "webhook_secret": SECRET, "api_url": "http://127.0.0.1:9/api/v4"},
    "buildkite": {
        "org": "my-great-org",
        "token": "t",
        "webhook_token": SECRET,
        "url": "http://127.0.0.1:9/v2",
    },
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, shared_database_url: str) -> Iterator[Controller]:
    env = {
        "RUNNER_CONTROLLER_PROVIDERS": json.dumps(PROVIDERS),
        "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0",
    }
    with running_controller(tmp_path_factory.mktemp("jobs"), shared_database_url, env=env) as controller:
        yield controller


def listed(controller: Controller, **params: str) -> list[dict[str, Any]]:
    response = controller.get("/v1/jobs", params=params)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def test_each_providers_published_payload_becomes_one_stored_job_record(served: Controller) -> None:
    github = (FIXTURES / "github" / "workflow_job.completed.failure.json").read_bytes()
    signed = "sha256=" + hmac.new(SECRET.encode(), github, hashlib.sha256).hexdigest()
    github_headers = {
        "X-GitHub-Event": "workflow_job",
        "X-GitHub-Delivery": "d-1",
        "X-Hub-Signature-256": signed,
    }
    gitlab = (FIXTURES / "gitlab" / "job_hook.go-gitlab.json").read_bytes()
    gitlab_headers = {"X-Gitlab-Event": "Job Hook", "X-Gitlab-Token": SECRET, "Idempotency-Key": "k-1"}
    lost = buildkite_fixture("job.json") | {"state": "failed", "exit_status": -1}
    buildkite = json.dumps({"event": "job.finished", "job": lost, "build": {"number": 7}}).encode()
    buildkite_headers = {"X-Buildkite-Event": "job.finished", "X-Buildkite-Token": SECRET}
    for _delivery in range(2):  # the second time a redelivery: nothing stored twice
        for provider, body, headers in (
            ("github", github, github_headers),
            ("gitlab", gitlab, gitlab_headers),
            ("buildkite", buildkite, buildkite_headers),
        ):
            response = served.post(f"/v1/webhooks/{provider}", data=body, headers=headers)
            assert response.status_code == 200, response.text
    stored = {j["runner"]: j for j in listed(served, runner="GitHub Actions 5,12270837,my-agent-123")}
    assert len(stored) == 3
    gh, gl, bk = stored["GitHub Actions 5"], stored["12270837"], stored["my-agent-123"]
    assert (
        gh["job_id"],
        gh["conclusion"],
        gh["started"],
        gh["finished"],
        gh["duration_s"],
        gh["provider"],
    ) == (
        "Codertocat/Hello-World/289782451",
        "failure",
        "2021-08-05T10:34:58Z",
        "2021-08-05T10:38:16Z",
        198.0,
        "github",
    )
    assert (gl["conclusion"], gl["failure_reason"], gl["started"], gl["finished"], gl["attempt"]) == (
        "success",
        None,
        "2023-01-10T13:50:05Z",
        "2023-01-10T13:50:54Z",
        2,
    )
    assert (bk["conclusion"], bk["failure_reason"], bk["run_id"], bk["duration_s"]) == (
        "system_failure",
        "agent_lost",
        "?#7",
        15.0,
    )
    # Today's job:<name> results are made as before, beside the records.
    results = served.get("/v1/runners/GitHub Actions 5").json()
    assert (results["executions"], results["failures"]) == (1, 1)


def test_a_buildbot_push_is_stored_once_as_a_job_record(served: Controller) -> None:
    build = {
        "buildid": 88,
        "number": 3,
        "builderid": 1,
        "buildrequestid": 5,
        "complete": True,
        "results": 4,
        "state_string": "exception slave lost",
        "started_at": 1790000000,
        "complete_at": 1790000042,
        "builder": {"name": "tests"},
        "buildset": {"bsid": 9},
        "properties": {"workername": ["bb-w1", "Worker"]},
    }
    for _push in range(2):
        assert served.post("/v1/webhooks/buildbot", json=build).status_code == 200
    (stored,) = listed(served, runner="bb-w1")
    assert (
        stored["job_id"],
        stored["name"],
        stored["conclusion"],
        stored["failure_reason"],
        stored["duration_s"],
    ) == (
        "88",
        "tests",
        "system_failure",
        "exception slave lost",
        42.0,
    )


def _at(hours_ago: float, seconds: float = 0) -> str:
    moment = datetime.now(UTC) - timedelta(hours=hours_ago) + timedelta(seconds=seconds)
    return moment.isoformat().replace("+00:00", "Z")


def test_listing_filters_and_the_runners_job_statistics(served: Controller) -> None:
    durations = {"a": 10, "b": 30, "c": 20, "d": 40}
    batch = [
        job(
            f"st-{n}",
            "failure" if n == "a" else "success",
            started=_at(2),
            finished=_at(2, s),
            runner={"id": "st-1"},
        )
        for n, s in durations.items()
    ]
    batch += [
        job("st-cancel", "cancelled", started=_at(1), finished=_at(1, 500), runner={"id": "st-1"}),
        job("st-old", "failure", started=_at(24 * 200), finished=_at(24 * 200, 5), runner={"id": "st-1"}),
        job(
            "st-other",
            "system_failure",
            name="lint",
            started=None,
            finished=_at(1),
            runner={"id": "st-2", "pool": "mac"},
        ),
    ]
    assert served.post("/v1/jobs", json=batch).json()["new"] == 7
    runner = served.get("/v1/runners/st-1").json()
    # Four judged jobs in the window (the cancelled one says nothing, the old one is outside it), one
    # failed; the median of 10, 20, 30, 40 s is 25 s.
    assert (
        runner["jobs"],
        runner["job_failures"],
        runner["job_failure_rate"],
        runner["median_job_duration_s"],
    ) == (
        4,
        1,
        0.25,
        25.0,
    )
    listing = {r["identity"]["id"]: r for r in served.get("/v1/runners").json()["items"]}
    assert (
        listing["st-2"]["jobs"],
        listing["st-2"]["job_failure_rate"],
        listing["st-2"]["median_job_duration_s"],
    ) == (
        1,
        1.0,
        None,  # no start, so no duration
    )
    assert listing["st-1"]["median_job_duration_s"] == 25.0

    newest_first = [j["job_id"] for j in listed(served, runner="st-1")]
    assert newest_first == ["st-cancel", "st-d", "st-b", "st-c", "st-a", "st-old"]
    assert [j["job_id"] for j in listed(served, runner="st-1", limit="2")] == ["st-cancel", "st-d"]
    assert [
        j["job_id"] for j in listed(served, runner="st-1,st-2", conclusion="system_failure,cancelled")
    ] == [
        "st-cancel",
        "st-other",
    ]
    assert [j["job_id"] for j in listed(served, pool="mac")] == ["st-other"]
    assert [j["job_id"] for j in listed(served, name="lint")] == ["st-other"]
    assert [j["job_id"] for j in listed(served, runner="st-1", since=_at(3))] == newest_first[:5]
    assert [j["job_id"] for j in listed(served, l="runner=st-1,conclusion!=success")] == [
        "st-cancel",
        "st-a",
        "st-old",
    ]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"since": "yesterday"}, "since: "),
        ({"since": str(int(time.time()) * 1000)}, "since: "),
        ({"conclusion": "exploded"}, "conclusion: unknown exploded"),
        ({"l": "colour=red"}, "selector: unknown key colour"),
        ({"limit": "0"}, "limit"),
    ],
    ids=["since-words", "since-milliseconds", "conclusion", "selector", "limit"],
)
def test_bad_filters_are_named(served: Controller, params: dict[str, str], message: str) -> None:
    response = served.get("/v1/jobs", params=params)
    assert response.status_code == 422 and message in response.text, response.text


def test_who_may_list(served: Controller) -> None:
    assert served.get("/v1/jobs", token=served.token("read")).status_code == 200
    assert served.get("/v1/jobs", token=served.token("ingest")).status_code == 403


def test_a_test_count_past_what_the_store_holds_is_named(served: Controller) -> None:
    response = served.post("/v1/jobs", json=[job("too-many", tests=2**31)])
    assert response.status_code == 422 and "tests" in response.text, response.text
    assert listed(served, runner="linux-03", name="unit-tests", l="job=too-many") == []
