"""The product story over real HTTP: import a history with runnerctl, read the verdicts back with it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import REPO, Controller, runnerctl_cmd, running_controller
from tests.sim import Fleet, simulate
from tests.sim.random_fleet import random_scenario
from tests.sim.scenarios import seed_story


@pytest.fixture(scope="module")
def story() -> Fleet:
    return simulate(seed_story(), seed=1)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory, story: Fleet) -> Iterator[tuple[Controller, Path]]:
    tmp = tmp_path_factory.mktemp("story")
    history = tmp / "history.ndjson"
    history.write_text("".join(line + "\n" for line in story.ndjson_lines()))
    with running_controller(tmp, env={"RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0"}) as controller:
        done = ctl(controller, "import", str(history), state=tmp / "state")
        assert done.returncode == 0, done.stderr
        assert "1 incident (1 sick, 0 suspect)" in done.stdout
        yield controller, history


def ctl(
    controller: Controller, *args: str, state: Path | None = None, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "RUNNERCTL_SERVER": controller.url,
        "RUNNERCTL_TOKEN": token or controller.admin_token,
    }
    if state is not None:
        env["XDG_STATE_HOME"] = str(state)
    return subprocess.run(
        runnerctl_cmd(*args), capture_output=True, text=True, cwd=REPO, env=env, timeout=600
    )


def test_an_ingest_token_imports_and_waits(imported: tuple[Controller, Path], tmp_path: Path) -> None:
    """The token a CI job holds: it may not read incidents, and the import used to end in a 403 there."""
    controller, history = imported
    done = ctl(controller, "import", str(history), state=tmp_path, token=controller.token("ingest"))
    assert done.returncode == 0, done.stderr
    assert "1 incident (1 sick, 0 suspect)" in done.stdout


def test_incidents_name_the_sick_runner(imported: tuple[Controller, Path]) -> None:
    controller, _ = imported
    incidents = json.loads(ctl(controller, "get", "incidents", "-o", "json").stdout)
    assert [(i["kind"], i["entity"], i["state"], i["dimension"]) for i in incidents] == [
        ("runner", "linux-03", "sick", "disk")
    ]
    incident = incidents[0]
    assert {"onset", "decided_at", "statistics", "evidence", "affected_jobs"} <= set(incident)
    assert incident["statistics"]["distinct_tests"] >= 12
    table = ctl(controller, "get", "incidents").stdout
    assert "linux-03" in table and "sick" in table and "disk" in table


def test_runners_show_health(imported: tuple[Controller, Path]) -> None:
    controller, _ = imported
    runners = json.loads(ctl(controller, "get", "runners", "-o", "json").stdout)
    health = {r["identity"]["id"]: r["health"]["health"] for r in runners}
    assert health["linux-03"] == "sick"
    assert {name for name, h in health.items() if h != "healthy"} == {"linux-03"}
    sick = ctl(controller, "get", "runners", "-l", "health=sick", "-o", "name")
    assert sick.stdout == "runner/linux-03\n"


def test_flaky_list_for_ci(imported: tuple[Controller, Path], story: Fleet) -> None:
    controller, _ = imported
    names = ctl(controller, "get", "tests", "--flaky", "-o", "name").stdout.split()
    assert set(names) >= story.truth.flaky_tests
    tests = json.loads(ctl(controller, "get", "tests", "--flaky", "-o", "json").stdout)
    assert all({"test_id", "verdict", "score"} <= set(t) and t["verdict"] == "flaky" for t in tests)
    assert controller.get("/v1/quarantine").text.split() == sorted(names)


def test_explain_runner_tells_the_evidence_chain(imported: tuple[Controller, Path]) -> None:
    controller, _ = imported
    done = ctl(controller, "explain", "runner", "linux-03")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for phrase in (
        "Health:    sick (disk)",
        "one-sided exact binomial",
        "Benjamini–Hochberg",
        "distinct tests failed",
        "evidence: disk covers",
        "disk_free_ratio=",
        "→ linux-03",
        "What would flip the verdict:",
    ):
        assert phrase in text, phrase
    healthy = ctl(controller, "explain", "runner", "linux-01").stdout
    assert "Health:    healthy" in healthy and "to become suspect" in healthy


def test_explain_test_shows_what_was_discounted(imported: tuple[Controller, Path], story: Fleet) -> None:
    controller, _ = imported
    incident = json.loads(ctl(controller, "get", "incidents", "-o", "json").stdout)[0]
    victim = next(t["test_id"] for t in incident["tests"] if t["test_id"] not in story.truth.flaky_tests)
    done = ctl(controller, "explain", "test", victim)
    assert done.returncode == 0, done.stderr
    assert "Verdict:   healthy" in done.stdout
    assert "a failure-counting scorer says flaky" in done.stdout
    assert incident["id"] in done.stdout and "runner/linux-03" in done.stdout


def test_reimport_is_idempotent(imported: tuple[Controller, Path], tmp_path: Path) -> None:
    controller, history = imported
    again = ctl(controller, "import", "--no-wait", str(history), state=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "(0 new)" in again.stderr


def test_import_resumes_and_names_a_bad_line(tmp_path: Path, story: Fleet) -> None:
    lines = list(story.ndjson_lines())[:12_000]
    history = tmp_path / "h.ndjson"
    wrong = '{"test_id": "x", "outcome": "maybe", "time": "2026-09-21T00:00:00Z", "runner": {"id": "r"}}'
    bad = [*lines[:11_000], wrong, *lines[11_000:]]
    history.write_text("".join(line + "\n" for line in bad))
    with running_controller(tmp_path, env={"RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0"}) as controller:
        failed = ctl(controller, "import", "--no-wait", str(history), state=tmp_path / "state")
        assert failed.returncode == 1
        assert f"{history}:11001: outcome: Input should be" in failed.stderr
        stored = controller.get("/v1/runners").json()["items"]
        assert sum(r["executions"] for r in stored) >= 5_000  # the batches before the bad one stay
        # An interrupted import of a good file picks up where its last acknowledged batch ended.
        good = tmp_path / "good.ndjson"
        good.write_text("".join(line + "\n" for line in lines))
        halfway = sum(len(line) + 1 for line in lines[:6_000])
        state = _state_file_for(good, tmp_path / "state")
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({"offset": halfway}))
        resumed = ctl(controller, "import", "--no-wait", str(good), state=tmp_path / "state")
        assert resumed.returncode == 0, resumed.stderr
        sent = int(resumed.stderr.split("imported ")[1].split(" results")[0])
        assert sent == sum(
            1 for line in lines[6_000:] if '"kind": "report"' not in line and '"kind":"report"' not in line
        )
        assert not state.exists()


def _state_file_for(path: Path, state_home: Path) -> Path:
    from runnerctl import import_

    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(state_home)
    try:
        return import_._state_file(path)
    finally:
        if old is None:
            del os.environ["XDG_STATE_HOME"]
        else:
            os.environ["XDG_STATE_HOME"] = old


def test_a_burst_is_explained_where_an_operator_looks(tmp_path: Path) -> None:
    # Random fleet 502: an outage reached one healthy runner of four (alpha-01), which failed most
    # tests it ran for forty minutes and then ran cleanly. The operator asking why it was not drained,
    # or why those tests are not flaky, is told about the burst.
    fleet = simulate(random_scenario(502), seed=1)
    history = tmp_path / "history.ndjson"
    history.write_text("".join(line + "\n" for line in fleet.ndjson_lines()))
    with running_controller(tmp_path, env={"RUNNER_CONTROLLER_ANALYSIS_INTERVAL_S": "0"}) as controller:
        assert ctl(controller, "import", str(history), state=tmp_path / "state").returncode == 0
        runner = ctl(controller, "explain", "runner", "alpha-01")
        assert runner.returncode == 0, runner.stderr
        assert "Health:    healthy" in runner.stdout
        assert "Burst burst-1: runner/alpha-01" in runner.stdout
        assert "burst-1 on runner/alpha-01" in runner.stdout  # what would make it a verdict
        tests = json.loads(ctl(controller, "get", "tests", "-o", "json").stdout)
        hit = next(
            t["test_id"]
            for t in tests
            if "burst-1" in t["discounted_by"] and t["test_id"] not in fleet.truth.flaky_tests
        )
        explained = ctl(controller, "explain", "test", hit)
        assert explained.returncode == 0, explained.stderr
        assert "burst-1: burst on runner/alpha-01" in explained.stdout
        assert "Verdict:   healthy" in explained.stdout
