"""runnerctl against a real controller over real HTTP, as an operator would run it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.controller.api.test_ingest import report, result
from tests.servers import REPO, Controller, runnerctl_cmd


def run(
    controller: Controller, *args: str, token: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = os.environ | {
        "RUNNERCTL_SERVER": controller.url,
        "RUNNERCTL_TOKEN": token or controller.admin_token,
    }
    full_env.pop("RUNNERCTL_CONTEXT", None)
    full_env |= env or {}
    return subprocess.run(
        runnerctl_cmd(*args), capture_output=True, text=True, cwd=REPO, env=full_env, timeout=60
    )


@pytest.fixture(scope="module")
def fleet(shared_controller: Controller) -> Controller:
    records = [result()]
    records.append(
        result(runner={"id": "win-01", "pool": "windows", "machine": "win-vm-01", "labels": ["windows"]})
    )
    assert shared_controller.post("/v1/results", json=records).status_code == 200
    assert shared_controller.post("/v1/reports", json={"reports": [report(1)]}).status_code == 200
    assert shared_controller.post("/v1/analysis/run").status_code == 200  # health comes from the analysis
    return shared_controller


def test_get_runners_table(fleet: Controller) -> None:
    done = run(fleet, "get", "runners")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAME", "POOL", "HEALTH", "DIMENSION", "CORDONED", "FAILURES", "LAST-SEEN"]
    assert lines[1].split()[:4] == ["linux-03", "linux", "warning", "disk"]  # its last disk reading: 1 % free
    assert lines[2].split()[:3] == ["win-01", "windows", "healthy"]


def test_get_runners_selector_and_formats(fleet: Controller) -> None:
    names = run(fleet, "get", "runners", "-l", "pool=windows", "-o", "name")
    assert names.stdout == "runner/win-01\n"
    as_json = json.loads(run(fleet, "get", "runners", "-o", "json").stdout)
    assert [r["identity"]["id"] for r in as_json] == ["linux-03", "win-01"]
    wide = run(fleet, "get", "runners", "-o", "wide").stdout
    assert "linux-vm-03" in wide and "MACHINE" in wide
    assert "- identity:" in run(fleet, "get", "runners", "-o", "yaml").stdout
    assert run(fleet, "get", "runners", "-l", "pool=macos").stderr.strip() == "No resources found"


def test_describe_runner(fleet: Controller) -> None:
    done = run(fleet, "describe", "runner", "linux-03")
    assert done.returncode == 0, done.stderr
    assert "Machine:      linux-vm-03" in done.stdout
    assert "disk    problem" in done.stdout and "/ free 1.0%" in done.stdout


def test_errors_and_usage(fleet: Controller, tmp_path: Path) -> None:
    missing = run(fleet, "describe", "runner", "nope")
    assert (missing.returncode, missing.stderr.strip()) == (1, "error: runner 'nope' not found")
    bad_format = run(fleet, "get", "runners", "-o", "xml")
    assert bad_format.returncode == 2
    assert "unknown output format 'xml'; allowed: table, wide, json, yaml, name" in bad_format.stderr
    unauthorized = run(fleet, "get", "runners", token="rct_wrong")
    assert unauthorized.returncode == 1
    assert "unknown or revoked token (check --token or RUNNERCTL_TOKEN)" in unauthorized.stderr
    down = run(fleet, "get", "runners", env={"RUNNERCTL_SERVER": "http://127.0.0.1:9"})
    # The clear sentence and the cause in a few words, not urllib3's pool and retry text.
    assert (down.returncode, down.stderr) == (
        1,
        "error: cannot reach the controller at http://127.0.0.1:9: connection refused\n",
    )
    reader = run(fleet, "drain", "linux-03", token=fleet.token("read"))
    assert (reader.returncode, reader.stderr) == (
        1,
        "error: role 'read' may not do this; needs one of: admin, operator (use a token with one of those "
        "roles: runner-controller token create --role ROLE)\n",
    )


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ("--server", "127.0.0.1:8080"),
            {},
            "--server '127.0.0.1:8080' is not an http:// or https:// URL: use e.g. 'http://127.0.0.1:8080'",
        ),
        (
            (),
            {"RUNNERCTL_SERVER": "localhost:8080"},
            "RUNNERCTL_SERVER 'localhost:8080' is not an http:// or https:// URL: use e.g. "
            "'http://localhost:8080'",
        ),
        (("--server", "http://"), {}, "--server 'http://' names no host: use e.g. 'http://127.0.0.1:8080'"),
        (
            ("--server", "http://h:99999"),
            {},
            "--server 'http://h:99999' has a port that is not a number from 1 to 65535",
        ),
    ],
    ids=["no-scheme-flag", "no-scheme-env", "no-host", "bad-port"],
)
def test_a_malformed_server_url_is_named_not_a_traceback(
    fleet: Controller, args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    done = run(fleet, *args, "get", "runners", env=env)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"error: {message}\n")


def test_config_file_context(fleet: Controller, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'current-context = "lab"\n[contexts.lab]\nserver = "{fleet.url}"\ntoken = "{fleet.admin_token}"\n'
    )
    env = os.environ | {"RUNNERCTL_CONFIG": str(config)}
    for key in ("RUNNERCTL_SERVER", "RUNNERCTL_TOKEN"):
        env.pop(key, None)
    done = subprocess.run(
        runnerctl_cmd("get", "runners", "-o", "name"),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    assert done.stdout.splitlines() == ["runner/linux-03", "runner/win-01"]


def test_version() -> None:
    done = subprocess.run(runnerctl_cmd("version"), capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.stdout.strip() == "runnerctl 0.1.0"
