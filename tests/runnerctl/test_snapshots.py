"""runnerctl's output, byte for byte, against golden files: a real controller over SQLite, fed the
seed story (linux-03's disk fills; two flaky tests), with one operator's cordon.

The CLI runs in this process (typer's runner: the same code over the same HTTP, without paying an
interpreter start per case); the other runnerctl tests run it as a subprocess.

Regenerate after an intended change with RUNNERCTL_UPDATE_SNAPSHOTS=1 and review the diff.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner, Result

from runnerctl.main import app
from tests.runnerctl.golden import Normaliser, check
from tests.servers import Controller, running_controller
from tests.sim import Fleet, simulate
from tests.sim.scenarios import seed_story

FORMATS = ("table", "wide", "json", "yaml", "name")
FLAKY = "tests/api/test_http_client.py::test_reads_missing_key[4096]"


@pytest.fixture(scope="module")
def story() -> Fleet:
    return simulate(seed_story(), seed=1)


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory, story: Fleet) -> Iterator[Controller]:
    # No background loops: nothing changes between the commands but what the test does.
    env = {"RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0", "RUNNER_CONTROLLER_REMEDIATION_INTERVAL_S": "0"}
    with running_controller(tmp_path_factory.mktemp("snapshots"), env=env) as running:
        for start in range(0, len(story.results), 20_000):
            assert running.post("/v1/results", json=story.results[start : start + 20_000]).status_code == 200
        for start in range(0, len(story.reports), 5_000):
            batch = {"reports": story.reports[start : start + 5_000]}
            assert running.post("/v1/reports", json=batch).status_code == 200
        assert running.post("/v1/analysis/run").status_code == 200
        cordoned = ctl(running, "cordon", "linux-05", "--reason", "disk swap booked")
        assert cordoned.stdout == "runner/linux-05 cordoned\n", cordoned.stderr
        yield running


@pytest.fixture(scope="module")
def normalise(story: Fleet) -> Normaliser:
    scenario = seed_story()
    return Normaliser(scenario.start, scenario.end)


def ctl(controller: Controller, *args: str) -> Result:
    env = {
        "RUNNERCTL_SERVER": controller.url,
        "RUNNERCTL_TOKEN": controller.admin_token,
        "RUNNERCTL_CONTEXT": None,
        "RUNNERCTL_CONFIG": os.devnull,
    }
    done = CliRunner().invoke(app, list(args), env=env, prog_name="runnerctl")
    assert done.exit_code == 0, (done.stderr, done.exception)
    return done


CASES = [
    *(
        (f"get-{resource}-{fmt}.txt", ("get", resource, "-o", fmt))
        for resource in ("runners", "incidents", "actions")
        for fmt in FORMATS
    ),
    # All tests that failed at least once: a long table; the flake scores behind it are pinned too.
    *((f"get-tests-{fmt}.txt", ("get", "tests", "-o", fmt)) for fmt in FORMATS),
    ("status-table.txt", ("status",)),
    ("status-json.txt", ("status", "-o", "json")),
    ("describe-runner-sick.txt", ("describe", "runner", "linux-03")),
    ("describe-runner-cordoned.txt", ("describe", "runner", "linux-05")),
    ("explain-runner.txt", ("explain", "runner", "linux-03")),
    ("explain-test.txt", ("explain", "test", FLAKY)),
    ("get-incidents-selected.txt", ("get", "incidents", "-l", "kind=runner,dimension=disk,state!=resolved")),
    ("get-tests-selected.txt", ("get", "tests", "-l", "verdict=flaky", "-o", "name")),
    ("get-actions-selected.txt", ("get", "actions", "-l", "actor=admin-token,status=done", "-o", "wide")),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[name.removesuffix(".txt") for name, _ in CASES])
def test_output_matches_snapshot(
    controller: Controller, normalise: Normaliser, name: str, args: tuple[str, ...]
) -> None:
    done = ctl(controller, *args)
    assert done.stderr == ""
    check(name, normalise.output(done.stdout))
