"""runnerctl cordon | uncordon | drain | get actions against a real controller, as an operator runs them.

These runners name no reachable provider, so a cordon is a record the controller honours; the Buildbot
pause itself is covered end to end in tests/e2e/test_remediation_buildbot.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.controller.api.test_ingest import result
from tests.runnerctl.test_get_describe import run
from tests.servers import Controller, free_port, running_controller


def runner(rid: str) -> dict[str, object]:
    pool = rid.partition("-")[0]
    return {"id": rid, "name": rid, "machine": f"vm-{rid}", "pool": pool, "provider": "none"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    """One controller; each test works on its own runners."""
    tmp_path = tmp_path_factory.mktemp("fleet")
    # auto mode with an instant, automatic recovery: the harshest setting for "never undo a person's cordon".
    policies = '{"linux": {"mode": "auto", "recovery_dwell_s": 0, "auto_uncordon": true}}'
    env = {
        "RUNNER_CONTROLLER_REMEDIATION_POLICIES": policies,
        "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0.2",
    }
    with running_controller(tmp_path, env=env) as controller:
        names = ("linux-01", "linux-02", "linux-03", "linux-04", "linux-05", "mac-01", "mac-02")
        records = [result(runner=runner(r)) for r in names]
        assert controller.post("/v1/results", json=records).status_code == 200
        yield controller


def test_cordon_wording_dry_run_and_already(fleet: Controller) -> None:
    dry = run(fleet, "cordon", "linux-03", "--dry-run")
    assert (dry.returncode, dry.stdout) == (0, "runner/linux-03 cordoned (dry run)\n")
    assert fleet.get("/v1/runners/linux-03").json()["cordon"] is None

    done = run(fleet, "cordon", "linux-03", "--reason", "disk replaced tomorrow")
    assert (done.returncode, done.stdout, done.stderr) == (0, "runner/linux-03 cordoned\n", "")
    again = run(fleet, "cordon", "linux-03")
    assert (again.returncode, again.stdout) == (0, "runner/linux-03 already cordoned\n")

    cordon = fleet.get("/v1/runners/linux-03").json()["cordon"]
    assert (cordon["reason"], cordon["source"], cordon["by"]) == (
        "disk replaced tomorrow",
        "operator",
        "admin-token",
    )
    assert run(fleet, "get", "runners", "-l", "pool=linux").stdout.splitlines()[3].split()[4] == "yes"


def test_a_persons_cordon_outlives_the_controllers_recovery(fleet: Controller) -> None:
    assert run(fleet, "cordon", "linux-02").returncode == 0
    time.sleep(1.5)  # several remediation passes, each of which would undo its own healthy cordons
    assert fleet.get("/v1/runners/linux-02").json()["cordon"]["by"] == "admin-token"
    undone = run(fleet, "uncordon", "linux-02")
    assert (undone.returncode, undone.stdout) == (0, "runner/linux-02 uncordoned\n")
    assert run(fleet, "uncordon", "linux-02").stdout == "runner/linux-02 already uncordoned\n"
    assert fleet.get("/v1/runners/linux-02").json()["cordon"] is None


def test_selector_cordons_each_match(fleet: Controller) -> None:
    done = run(fleet, "cordon", "-l", "pool=mac", "--dry-run")
    assert done.stdout.splitlines() == [
        "runner/mac-01 cordoned (dry run)",
        "runner/mac-02 cordoned (dry run)",
    ]
    none = run(fleet, "cordon", "-l", "pool=windows")
    assert (none.returncode, none.stdout, none.stderr.strip()) == (0, "", "No resources found")


def test_drain_without_incident_cordons_and_says_there_is_nothing_to_rerun(fleet: Controller) -> None:
    done = run(fleet, "drain", "linux-01", "--rerun")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "runner/linux-01 cordoned\nrunner/linux-01 drained\n"
    assert "no open incident" in done.stderr


def test_errors_and_usage(fleet: Controller) -> None:
    missing = run(fleet, "cordon", "nope")
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: runner 'nope' not found")
    usage = run(fleet, "cordon")
    assert usage.returncode == 2 and "for help" in usage.stderr
    reader = run(fleet, "cordon", "linux-05", token=fleet.token("read"))
    assert reader.returncode == 1 and "may not do this" in reader.stderr


def test_get_actions_lists_the_audit_log(fleet: Controller) -> None:
    run(fleet, "cordon", "linux-04", "--reason", "flaky fan")
    table = run(fleet, "get", "actions")
    assert table.returncode == 0
    header, first = table.stdout.splitlines()[:2]
    assert header.split() == ["AT", "ACTION", "STATUS", "RUNNER", "INCIDENT", "JOB", "ACTOR", "DETAIL"]
    assert first.split()[1:4] == ["cordon", "done", "linux-04"]
    items = fleet.get("/v1/actions", params={"runner": "linux-04"}).json()["items"]
    assert [(a["action"], a["status"], a["reason"]) for a in items] == [("cordon", "done", "flaky fan")]


def test_unreachable_provider_fails_closed(tmp_path: Path) -> None:
    providers = f'{{"buildbot": {{"url": "http://127.0.0.1:{free_port()}/", "timeout_s": 1}}}}'
    with running_controller(tmp_path, env={"RUNNER_CONTROLLER_PROVIDERS": providers}) as controller:
        assert controller.post("/v1/results", json=[result()]).status_code == 200  # provider: buildbot
        done = run(controller, "cordon", "linux-03")
        assert done.returncode == 1
        assert done.stderr.startswith("error: runner/linux-03 not changed: buildbot: GET workers/linux-03")
        assert "no action taken" in done.stderr
        assert controller.get("/v1/runners/linux-03").json()["cordon"] is None
