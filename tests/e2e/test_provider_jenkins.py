"""The Jenkins story on real processes: a real controller (auto mode, SQLite) polling the fake Jenkins
(tests/fakes/jenkins.py), whose three nodes run freestyle builds publishing JUnit reports; linux-03's
disk is full. Polling brings each build's test results in; the controller judges linux-03 sick from
its readings, marks it temporarily offline, builds the failed jobs again (elsewhere, since linux-03
takes nothing now), sees the new builds pass through the same polling and clears the flake records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.e2e.provider_story import FAST_AUTO, actions, post_readings, sick_incident, wait_for
from tests.fakes.jenkins import FakeJenkins
from tests.servers import Controller, database, running_controller

USER, TOKEN, PASSWORD = "runnerctl", "11e0f1c2d3b4a5968778695a4b3c2d1e0f", "unused-password"
NODES = ["linux-01", "linux-02", "linux-03"]
JOBS = {
    "app-tests": ["tests.test_io.test_read", "tests.test_io.test_write", "tests.test_io.test_seek"],
    "lib-tests": ["lib.test_core.test_parse", "lib.test_core.test_render"],
    "cli-tests": ["cli.test_main.test_help", "cli.test_main.test_version"],
}


@dataclass
class Story:
    controller: Controller
    jenkins: FakeJenkins


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    fake = FakeJenkins(USER, TOKEN, PASSWORD)
    fake.start()
    for name in NODES:
        fake.add_node(name, sick=name == "linux-03")
    for job, tests in JOBS.items():
        fake.add_job(job, tests)
    providers = {
        "jenkins": {
            "url": fake.url,
            "username": USER,
            "api_token": TOKEN,
            "jobs": sorted(JOBS),
            "pool": "linux",
            "timeout_s": 5,
        }
    }
    env = FAST_AUTO | {"RUNNER_CONTROLLER_PROVIDERS": json.dumps(providers)}
    try:
        with running_controller(tmp_path_factory.mktemp("jenkins"), env=env) as controller:
            yield Story(controller, fake)
    finally:
        fake.stop()


def cursor(controller: Controller) -> dict[str, dict[str, object]] | None:
    with database(controller.db) as conn:
        found = conn.exec_driver_sql("SELECT cursor FROM poll_cursors WHERE provider = 'jenkins'").scalar()
    return None if found is None else json.loads(found)


def passed_results(controller: Controller, job_id: str) -> int:
    with database(controller.db) as conn:
        sql = "SELECT count(*) FROM results WHERE job_id = ? AND outcome = 'passed'"
        return int(conn.exec_driver_sql(sql, (job_id,)).scalar_one())


def test_sick_node_taken_offline_jobs_rebuilt_and_flakes_cleared(story: Story) -> None:
    controller, jenkins = story.controller, story.jenkins
    # The first poll marks "now": builds from before the controller started are not history to judge.
    wait_for(controller, "the first poll", lambda: cursor(controller))
    post_readings(controller, NODES, sick="linux-03", provider="jenkins")
    names = list(JOBS)
    for turn in range(3):  # 9 builds, 3 on each node (round robin), each job once on linux-03
        for job in names[turn:] + names[:turn]:
            jenkins.enqueue(job)
    jenkins.wait_for("every build", jenkins.idle, timeout=30)
    sick_builds = sorted(f"{job}#{b.number}" for job, b in jenkins.builds_on("linux-03"))
    assert len(sick_builds) == 3

    incident = sick_incident(controller, "linux-03")
    assert incident["dimension"] == "disk"
    assert sorted(j["job_id"] for j in incident["affected_jobs"]) == sick_builds

    node = jenkins.nodes["linux-03"]
    wait_for(controller, "linux-03 temporarily offline", lambda: node.temporarily_offline)
    assert node.offline_message is not None
    assert node.offline_message.startswith(f"runnerctl: {incident['id']}: sick (disk)")

    done = wait_for(
        controller,
        "every failed build rerun",
        lambda: (found := actions(controller, action="rerun", status="done")) and len(found) == 3 and found,
    )
    assert sorted(a["job"] for a in done) == sick_builds
    jenkins.wait_for("the new builds", jenkins.idle, timeout=30)
    rebuilt = []
    for name in JOBS:
        newest = max(jenkins.jobs[name].builds.values(), key=lambda b: b.number)
        assert newest.node != "linux-03" and newest.result == "SUCCESS"
        rebuilt.append((f"{name}#{newest.number}", len(JOBS[name])))
    # Their passing tests came in through the same polling.
    for job_id, count in rebuilt:
        wait_for(controller, f"{job_id} polled", lambda j=job_id, n=count: passed_results(controller, j) == n)

    clearance = wait_for(
        controller, "the flake clearance", lambda: controller.get("/v1/clearances").json()["items"]
    )[0]
    assert (clearance["incident"], clearance["runner"]) == (incident["id"], "linux-03")
    expected = {f"{t.rpartition('.')[0]}::{t.rpartition('.')[2]}" for tests in JOBS.values() for t in tests}
    assert set(clearance["tests"]) == expected
    tests = controller.get("/v1/tests").json()["items"]
    assert {t["test_id"] for t in tests if incident["id"] in t["cleared_by"]} == expected

    # The exact writes: one offline mark, one new build per failed build, nothing else.
    writes = jenkins.calls()
    assert writes[0] == "POST /computer/linux-03/changeOfflineCause"
    assert sorted(writes[1:]) == sorted(f"POST /job/{j.partition('#')[0]}/build" for j in sick_builds)
    settled = actions(controller, action="rerun-result")
    assert len(settled) == 3 and all(a["detail"].endswith("passed") for a in settled)
    # Results came per test, not per build: the JUnit report of each polled build.
    runner = controller.get("/v1/runners/linux-03").json()
    assert (runner["executions"], runner["failures"]) == (7, 7)
    assert cursor(controller) == {
        name: {"next": max(jenkins.jobs[name].builds) + 1, "open": []} for name in sorted(JOBS)
    }
