"""The real-Buildbot harness acts like the CI system runnerctl drives: sick workers, pause, rebuild."""

from __future__ import annotations

import contextlib
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.e2e.buildbot import (
    FAILURE,
    PROJECT_TEST_COUNT,
    SUCCESS,
    BuildbotFleet,
    result_name,
    start_fleet,
)
from tests.e2e.http_receiver import Received, Receiver, http_receiver

pytestmark = [pytest.mark.needs_buildbot, pytest.mark.slow]

TOKEN = "e2e-token"
Build = dict[str, Any]


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with http_receiver() as server:
        yield server


@pytest.fixture(scope="module")
def module_fleet(
    buildbot_venv: Path, tmp_path_factory: pytest.TempPathFactory, receiver: Receiver
) -> Iterator[BuildbotFleet]:
    # One fleet for the module: starting one costs several seconds; `fleet` below resets its state.
    with start_fleet(
        tmp_path_factory.mktemp("buildbot"),
        venv=buildbot_venv,
        results_url=receiver.url + "/api/v1/results/junit",
        status_push_url=receiver.url + "/status",
        token=TOKEN,
    ) as fleet:
        yield fleet


@pytest.fixture
def fleet(module_fleet: BuildbotFleet) -> Iterator[BuildbotFleet]:
    yield module_fleet
    for name in module_fleet.workers:
        module_fleet.sick_marker(name).unlink(missing_ok=True)
        module_fleet.unpause(name)
    module_fleet.wait_until(lambda: not module_fleet.builds(complete="false"), 60, "builds still running")


def junit_upload(receiver: Receiver, build: Build) -> tuple[dict[str, str], ET.Element]:
    """The JUnit upload of a build: its query parameters and parsed XML."""
    upload = receiver.wait_for(
        lambda r: r.path == "/api/v1/results/junit" and r.query.get("job_id") == str(build["buildid"])
    )
    assert upload.method == "POST"
    assert upload.headers["authorization"] == f"Bearer {TOKEN}"
    return upload.query, ET.fromstring(upload.body)


def failed_cases(xml: ET.Element) -> list[str]:
    return [
        case.get("name", "")
        for case in xml.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]


def describe(fleet: BuildbotFleet, build: Build) -> str:
    return f"build {build['buildid']} on {fleet.workername(build)}: {result_name(build['results'])}"


def test_all_workers_connect(fleet: BuildbotFleet) -> None:
    workers = fleet.api("workers")
    assert workers["meta"]["total"] == 3
    assert {w["name"]: (bool(w["connected_to"]), w["paused"]) for w in workers["workers"]} == {
        "w1": (True, False),
        "w2": (True, False),
        "w3": (True, False),
    }


def test_healthy_build_passes_and_uploads_junit(fleet: BuildbotFleet, receiver: Receiver) -> None:
    brid = fleet.force_build(worker="w1")

    build = fleet.wait_build_for_request(brid)

    assert (fleet.workername(build), build["results"]) == ("w1", SUCCESS), describe(fleet, build)
    query, xml = junit_upload(receiver, build)
    buildsetid = fleet.api(f"buildrequests/{brid}")["buildrequests"][0]["buildsetid"]
    assert query == {
        "job_id": str(build["buildid"]),
        "run_id": str(buildsetid),
        "runner_id": "w1",
        "pool": "buildbot",
        "machine": "w1",
        "provider": "buildbot",
    }
    assert len(list(xml.iter("testcase"))) == PROJECT_TEST_COUNT
    assert failed_cases(xml) == []


def test_status_push_reports_finished_build(fleet: BuildbotFleet, receiver: Receiver) -> None:
    build = fleet.wait_build_for_request(fleet.force_build(worker="w3"))

    def finished_push(r: Received) -> bool:
        if r.path != "/status":
            return False
        pushed = json.loads(r.body)
        return bool(pushed["buildid"] == build["buildid"] and pushed["complete"])

    push = receiver.wait_for(finished_push)

    assert push.headers["authorization"] == f"Bearer {TOKEN}"
    pushed = json.loads(push.body)
    assert pushed["properties"]["workername"][0] == "w3"
    assert pushed["results"] == SUCCESS


def test_sick_worker_fails_most_tests_until_it_heals(fleet: BuildbotFleet, receiver: Receiver) -> None:
    fleet.sick_marker("w2").touch()

    sick_request, healthy_request = fleet.force_build(worker="w2"), fleet.force_build(worker="w3")
    sick = fleet.wait_build_for_request(sick_request)
    healthy = fleet.wait_build_for_request(healthy_request)

    assert sick["results"] == FAILURE, describe(fleet, sick)
    assert healthy["results"] == SUCCESS, describe(fleet, healthy)
    _, xml = junit_upload(receiver, sick)
    assert len(list(xml.iter("testcase"))) == PROJECT_TEST_COUNT
    assert len(failed_cases(xml)) > PROJECT_TEST_COUNT // 2
    assert "Not a directory" in ET.tostring(xml, encoding="unicode")

    fleet.sick_marker("w2").unlink()
    healed = fleet.wait_build_for_request(fleet.force_build(worker="w2"))

    assert healed["results"] == SUCCESS, describe(fleet, healed)


def test_flaky_test_fails_alone_on_a_healthy_worker(fleet: BuildbotFleet, receiver: Receiver) -> None:
    build = fleet.wait_build_for_request(fleet.force_build(worker="w1", flaky="test_wal_mode"))

    assert build["results"] == FAILURE, describe(fleet, build)
    _, xml = junit_upload(receiver, build)
    assert failed_cases(xml) == ["test_wal_mode"]


def test_paused_worker_finishes_its_build_and_takes_no_new_ones(fleet: BuildbotFleet) -> None:
    busy = fleet.force_build(worker="w2", hold_seconds=2)
    fleet.wait_until(lambda: bool(fleet.builds(buildrequestid=busy)), 30, "held build never started")

    fleet.pause("w2", reason="suspected sick by runnerctl")
    state = fleet.worker_states()["w2"]
    assert (state["paused"], state["pause_reason"]) == (True, "suspected sick by runnerctl")
    others = [fleet.force_build() for _ in range(4)]
    held = fleet.wait_build_for_request(busy)
    builds = [fleet.wait_build_for_request(brid) for brid in others]

    assert (fleet.workername(held), held["results"]) == ("w2", SUCCESS)
    assert {fleet.workername(b) for b in builds} == {"w1", "w3"}
    assert all(b["results"] == SUCCESS for b in builds), [describe(fleet, b) for b in builds]


def test_rebuild_of_failed_build_lands_on_a_healthy_worker(fleet: BuildbotFleet, receiver: Receiver) -> None:
    fleet.sick_marker("w3").touch()
    failed = fleet.wait_build_for_request(fleet.force_build(worker="w3"))
    assert failed["results"] == FAILURE, describe(fleet, failed)
    fleet.pause("w3", reason="sick")

    rebuilt = fleet.wait_build_for_request(fleet.rebuild(failed["buildid"]))

    assert fleet.workername(rebuilt) in {"w1", "w2"}
    assert rebuilt["results"] == SUCCESS, describe(fleet, rebuilt)
    buildset = fleet.api(f"buildrequests/{rebuilt['buildrequestid']}")["buildrequests"][0]["buildsetid"]
    assert fleet.api(f"buildsets/{buildset}")["buildsets"][0]["rebuilt_buildid"] == failed["buildid"]
    query, xml = junit_upload(receiver, rebuilt)
    assert query["runner_id"] == fleet.workername(rebuilt)
    assert failed_cases(xml) == []


def test_wait_builds_counts_completed_builds(fleet: BuildbotFleet) -> None:
    before = len(fleet.builds(complete="true"))
    for _ in range(3):
        fleet.force_build()

    done = fleet.wait_builds(before + 3)

    assert len(done) == before + 3
    assert all(b["complete"] and fleet.workername(b) in fleet.workers for b in done)


def test_teardown_leaves_no_process_behind(buildbot_venv: Path, tmp_path: Path) -> None:
    pids: list[int] = []
    with (
        pytest.raises(RuntimeError, match="test failed mid-build"),
        start_fleet(tmp_path / "bb", venv=buildbot_venv, workers=["w1"]) as small,
    ):
        small.force_build(hold_seconds=60)
        worker = psutil.Process(small.pids[1])
        small.wait_until(lambda: _runs(worker, "pytest"), 60, "the build's pytest never started")
        for pid in small.pids:
            pids += [pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))]
        raise RuntimeError("test failed mid-build")

    assert len(pids) > 2, "expected master, worker and the build's command"
    assert [pid for pid in pids if _alive(pid)] == []


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _runs(parent: psutil.Process, needle: str) -> bool:
    for child in parent.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if needle in " ".join(child.cmdline()):
                return True
    return False
