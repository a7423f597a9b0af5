"""Hostile and careless input, hand-written beside the schemathesis run (test_fuzz.py), which found none
of these: each is refused with a 4xx naming the field, stores nothing, and leaves reads working.

Against a real `runner-controller serve` with the GitHub, GitLab and Buildkite webhook receivers
configured (their APIs are never called: only deliveries are posted), on SQLite and PostgreSQL: the
stricter database turns different inputs into errors (a NUL in text).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
import requests

from controller.providers.github import signature
from tests.controller.api.test_ingest import report, result
from tests.servers import Controller, running_controller

GITHUB_SECRET, GITLAB_SECRET, BUILDKITE_SECRET = "gh-secret", "gl-secret", "bk-secret"
NOWHERE = "http://127.0.0.1:9"  # the providers' APIs: never reached by a delivery
PROVIDERS = {
    "github": {"token": "t", "webhook_secret": GITHUB_SECRET, "owner": "o", "repo": "r", "api_url": NOWHERE},
    "gitlab": {"token": "t", "webhook_secret": GITLAB_SECRET, "api_url": NOWHERE},
    "buildkite": {
        "org": "o",
        "token": "t",
        "webhook_token": BUILDKITE_SECRET,
        "url": NOWHERE,
        "graphql_url": NOWHERE,
    },
}
YEAR_0 = "0001-01-01T00:00:00+01:00"
YEAR_9999 = "9999-12-31T23:59:59Z"
STORED = ("results", "reports", "readings", "runners", "webhook_deliveries")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, shared_database_url: str) -> Iterator[Controller]:
    env = {
        "RUNNER_CONTROLLER_PROVIDERS": json.dumps(PROVIDERS),
        # No remediation loop: it would ask the configured providers' (absent) APIs about runners.
        "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0",
    }
    with running_controller(tmp_path_factory.mktemp("hostile"), shared_database_url, env) as controller:
        yield controller


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))


# -- provider deliveries, signed as each provider signs them ------------------------------------------


def github_job(**job: Any) -> dict[str, Any]:
    found = {
        "id": 7,
        "run_id": 9,
        "run_attempt": 1,
        "name": "build",
        "status": "completed",
        "conclusion": "failure",
        "runner_name": "gh-runner-1",
        "completed_at": now_iso(),
    }
    return {"workflow_job": found | job, "repository": {"full_name": "o/r"}}


def gitlab_job(**fields: Any) -> dict[str, Any]:
    found = {
        "object_kind": "build",
        "project_id": 5,
        "build_id": 11,
        "build_status": "failed",
        "build_name": "test",
        "pipeline_id": 3,
        "retries_count": 0,
        "runner": {"id": 42, "description": "gl-runner", "tags": ["linux"]},
        "build_finished_at": now_iso(),
    }
    return found | fields


def buildkite_job(agent: dict[str, Any] | None = None, **job: Any) -> dict[str, Any]:
    found = {
        "id": "job-uuid-1",
        "type": "script",
        "state": "failed",
        "step_key": "test",
        "retries_count": 0,
        "agent": agent or {"id": "agent-uuid", "name": "bk-agent-1"},
        "finished_at": now_iso(),
    }
    return {
        "event": "job.finished",
        "job": found | job,
        "build": {"number": 4},
        "pipeline": {"slug": "p"},
    }


def deliver(controller: Controller, provider: str, payload: dict[str, Any] | bytes) -> requests.Response:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {"Content-Type": "application/json"}
    if provider == "github":
        headers |= {
            "X-GitHub-Event": "workflow_job",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": signature(GITHUB_SECRET.encode(), body),
        }
    elif provider == "gitlab":
        headers |= {
            "X-Gitlab-Event": "Job Hook",
            "X-Gitlab-Token": GITLAB_SECRET,
            "X-Gitlab-Event-UUID": str(uuid.uuid4()),
        }
    else:
        headers |= {"X-Buildkite-Event": "job.finished", "X-Buildkite-Token": BUILDKITE_SECRET}
    return requests.post(f"{controller.url}/v1/webhooks/{provider}", data=body, headers=headers, timeout=60)


# -- each request: what it sends, and what the refusal must name ----------------------------------------

Send = Callable[[Controller], requests.Response]


def results(*records: dict[str, Any]) -> Send:
    return lambda c: c.post("/v1/results", json=list(records))


def raw_results(text: str) -> Send:
    # Infinity, NaN and 1e400 are not JSON; careless writers (Python's json.dumps) send them anyway.
    return lambda c: c.post("/v1/results", data=text, headers={"Content-Type": "application/json"})


def junit(xml: str, **query: str) -> Send:
    params = {"runner_id": "junit-runner"} | query
    return lambda c: c.post("/v1/results/junit", data=xml.encode(), params=params)


def reports(*bodies: dict[str, Any]) -> Send:
    return lambda c: c.post("/v1/reports", json={"reports": list(bodies)})


def raw_report(reading: str) -> Send:
    body = json.dumps({"reports": [report(1, readings=[])]}).replace(
        '"readings": []', f'"readings": [{reading}]'
    )
    return lambda c: c.post("/v1/reports", data=body, headers={"Content-Type": "application/json"})


def webhook(provider: str, payload: dict[str, Any] | bytes) -> Send:
    return lambda c: deliver(c, provider, payload)


SUITE = '<testsuite name="s" timestamp="{stamp}"><testcase classname="c" name="t"/></testsuite>'
REFUSED: list[tuple[str, Send, int, str]] = [
    # 1. A time the store cannot convert back: every later read of the runners was a 500.
    (
        "results-year-0",
        results(result(time=YEAR_0)),
        422,
        "time: Value error, 0001-01-01T00:00:00+01:00 is before 2000-01-01",
    ),
    ("junit-query-year-0", junit(SUITE.format(stamp=""), time=YEAR_0), 422, "time: Value error, 0001-01-01"),
    ("report-year-0", reports(report(1, observed_at=YEAR_0)), 422, "observed_at: Value error, 0001-01-01"),
    (
        "github-year-0",
        webhook("github", github_job(completed_at=YEAR_0)),
        422,
        "time: Value error, 0001-01-01",
    ),
    ("gitlab-year-0", webhook("gitlab", gitlab_job(build_finished_at=YEAR_0)), 422, "time: Value error"),
    ("buildkite-year-0", webhook("buildkite", buildkite_job(finished_at=YEAR_0)), 422, "time: Value error"),
    # 2. A date in the future would move the analysis' as_of there and hide every verdict.
    ("results-year-9999", results(result(time=YEAR_9999)), 422, "ahead of the controller's clock"),
    (
        "junit-suite-year-9999",
        junit(SUITE.format(stamp="9999-12-31T23:59:59")),
        422,
        "time: Value error, 9999-12-31",
    ),
    ("report-year-9999", reports(report(1, observed_at=YEAR_9999)), 422, "observed_at: Value error, 9999"),
    (
        "github-year-9999",
        webhook("github", github_job(completed_at=YEAR_9999)),
        422,
        "time: Value error, 9999",
    ),
    # 3. JUnit that broke the parser's caller.
    ("junit-suite-year-0", junit(SUITE.format(stamp=YEAR_0)), 422, "time: Value error, 0001-01-01"),
    (
        "junit-utf-7",
        junit('<?xml version="1.0" encoding="UTF-7"?>' + SUITE.format(stamp="")),
        400,
        "encoding cannot be read (multi-byte encodings are not supported): send UTF-8",
    ),
    (
        "junit-unknown-encoding",
        junit('<?xml version="1.0" encoding="x-nope"?><testsuite/>'),
        400,
        "encoding cannot be read",
    ),
    # 5. Signed deliveries with fields past the public models' bounds.
    (
        "github-long-name",
        webhook("github", github_job(name="n" * 1997)),
        422,
        "github webhook: job 'o/r/7': name (stored as test_id",
    ),
    (
        "github-long-runner",
        webhook("github", github_job(runner_name="r" * 201)),
        422,
        "github webhook: runner: id: String should have at most 200 characters",
    ),
    (
        "github-long-full-name",
        webhook("github", github_job() | {"repository": {"full_name": "o/" + "r" * 600}}),
        422,
        "job id (with its repository or project)",
    ),
    (
        "github-run-attempt",
        webhook("github", github_job(run_attempt=10_000_000)),
        422,
        "attempt: Input should be less than or equal to 1000000",
    ),
    (
        "github-deep-json",
        webhook("github", b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
        422,
        "github webhook: the body nests too deeply",
    ),
    (
        "github-runner-slash",
        webhook("github", github_job(runner_name="a/b")),
        422,
        "runner: id: Value error, must not contain '/'",
    ),
    (
        "gitlab-negative-retries",
        webhook("gitlab", gitlab_job(retries_count=-5)),
        422,
        "attempt: Input should be greater than or equal to 0",
    ),
    (
        "gitlab-long-name",
        webhook("gitlab", gitlab_job(build_name="n" * 1997)),
        422,
        "gitlab webhook: job '5/11': name",
    ),
    (
        "buildkite-retries-x",
        webhook("buildkite", buildkite_job(retries_count="x")),
        422,
        "buildkite webhook: not a body buildkite sends: ValueError",
    ),
    (
        "buildkite-long-agent",
        webhook("buildkite", buildkite_job(agent={"id": "u", "name": "a" * 201})),
        422,
        "buildkite webhook: runner: id: String should have at most 200",
    ),
    (
        "buildkite-long-step-key",
        webhook("buildkite", buildkite_job(step_key="k" * 1997)),
        422,
        "buildkite webhook: job 'job-uuid-1': name",
    ),
    # PostgreSQL cannot store it (SQLite can): refused on both, as every other route does.
    (
        "github-nul-runner",
        webhook("github", github_job(runner_name="gh\x00runner")),
        422,
        "runner: id: Value error, must not contain control",
    ),
    (
        "github-nul-job-name",
        webhook("github", github_job(name="build\x00")),
        422,
        "job result 0: test_id: contains NUL",
    ),
    # 6. The webhook's own limit, not the API's 16 MiB.
    (
        "github-over-1-mib",
        webhook("github", b" " * (1024 * 1024 + 1)),
        413,
        "exceeds the limit of 1048576 bytes",
    ),
    # 7. One key for two runners within one batch is the same clash as across two batches.
    (
        "report-key-clash-in-batch",
        reports(
            report(1, runner="clash-a") | {"agent_id": "a"}, report(1, runner="clash-b") | {"agent_id": "a"}
        ),
        409,
        "appears in this batch for runner 'clash-a' and for runner 'clash-b'",
    ),
    # 8. Values that were altered silently: stored as null, as inf, or read as milliseconds.
    (
        "clock-offset-infinity",
        raw_report('{"check": "clock", "offset_s": Infinity}'),
        422,
        "readings[0].clock.offset_s: Input should be a finite number",
    ),
    (
        "psi-nan",
        raw_report('{"check": "memory", "psi_some_avg10": NaN}'),
        422,
        "readings[0].memory.psi_some_avg10: Input should be a finite number",
    ),
    (
        "other-check-infinity",
        raw_report('{"check": "gpu", "temp": {"c": Infinity}}'),
        422,
        "temp: Infinity and NaN cannot be stored",
    ),
    (
        "duration-infinity",
        raw_results(json.dumps([result()]).replace('"duration_s": 1.2', '"duration_s": Infinity')),
        422,
        "duration_s: Input should be a finite number",
    ),
    (
        "duration-1e400",
        raw_results(json.dumps([result()]).replace('"duration_s": 1.2', '"duration_s": 1e400')),
        422,
        "duration_s: Input should be a finite number",
    ),
    (
        "time-in-milliseconds",
        results(result(time=1_000_000_000_000)),
        422,
        "looks like epoch milliseconds; send epoch seconds (1000000000)",
    ),
    (
        "time-in-milliseconds-string",
        results(result(time="1000000000000")),
        422,
        "looks like epoch milliseconds",
    ),
    # 9. Ids that GET /v1/runners/{id} cannot address, or that forge lines where they are printed.
    (
        "runner-id-slash",
        results(result(runner={"id": "a/b"})),
        422,
        "runner.id: Value error, must not contain '/'",
    ),
    (
        "runner-id-newline",
        results(result(runner={"id": "a\nb"})),
        422,
        "runner.id: Value error, must not contain control",
    ),
    (
        "report-runner-id-escape",
        reports(report(1, runner="a\x1b[31m")),
        422,
        "runner.id: Value error, must not contain control",
    ),
    (
        "junit-runner-id-slash",
        junit(SUITE.format(stamp=""), runner_id="a/b"),
        422,
        "id: Value error, must not contain '/'",
    ),
]


def stored(controller: Controller) -> dict[str, int]:
    return {table: controller.count(table) for table in STORED}


@pytest.mark.parametrize(
    ("send", "status", "named"), [case[1:] for case in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_refused_with_the_field_named_and_nothing_stored(
    hostile: Controller, send: Send, status: int, named: str
) -> None:
    before = stored(hostile)
    response = send(hostile)
    assert response.status_code == status, response.text
    assert named in response.json()["detail"]
    assert stored(hostile) == before
    # And reads still answer (item 1: one stored record made them 500 for good).
    assert hostile.get("/v1/runners").status_code == 200


def test_times_within_bounds_are_taken(hostile: Controller) -> None:
    """The bounds are not so tight that a runner's clock hours ahead (a sickness to find, not to refuse),
    or epoch seconds, are refused."""
    ahead = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3 * 3600))
    records = [
        result(test_id="t-ahead", time=ahead, runner={"id": "bounds"}),
        result(test_id="t-epoch", time=int(time.time()) - 3600, runner={"id": "bounds"}),
        result(test_id="t-2000", time="2000-01-01T00:00:00Z", runner={"id": "bounds"}),
    ]
    response = hostile.post("/v1/results", json=records)
    assert response.status_code == 200, response.text
    assert response.json()["new"] == 3


def test_one_runner_far_ahead_does_not_move_as_of(hostile: Controller) -> None:
    """Every window hangs from `as_of`: a runner whose clock runs hours ahead must not drag it along."""
    now = time.time()

    def at(seconds: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))

    records = [
        result(test_id="t-on-time", time=at(now - 60), runner={"id": "on-time-a"}),
        result(test_id="t-on-time", time=at(now - 30), runner={"id": "on-time-b"}),
        result(test_id="t-on-time", time=at(now + 5 * 3600), runner={"id": "clock-ahead"}),
    ]
    assert hostile.post("/v1/results", json=records).status_code == 200
    assert hostile.post("/v1/analysis/run").status_code == 200
    as_of = datetime.fromisoformat(hostile.get("/v1/analysis").json()["as_of"]).timestamp()
    assert now - 60 <= as_of <= now + 3600, (as_of - now, "as_of followed the runner ahead")


def test_explain_a_runner_with_readings_and_no_results(hostile: Controller) -> None:
    sent = hostile.post(
        "/v1/reports", json={"reports": [report(1, runner="readings-only", observed_at=now_iso())]}
    )
    assert sent.status_code == 200, sent.text
    assert hostile.post("/v1/analysis/run").status_code == 200
    response = hostile.get("/v1/runners/readings-only/explain")
    assert response.status_code == 200, response.text
    found = response.json()
    assert (found["runner"], found["machine"], found["pool"]) == ("readings-only", None, None)
    assert found["pivot"]["runner"] == []
    assert "no test results from this runner yet" in found["what_would_flip"][-1]


def test_a_token_in_the_query_never_reaches_the_log(hostile: Controller) -> None:
    secret = hostile.token("read")
    refused = requests.get(f"{hostile.url}/v1/runners?token={secret}&l=pool%3Dx", timeout=30)
    assert refused.status_code == 401
    time.sleep(0.5)  # the access log line is written after the answer
    log = hostile.log.read_text()
    assert "GET /v1/runners?token=<redacted>&l=pool%3Dx" in log
    assert secret not in log and secret[4:] not in log
