from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.commands import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("RUNNER_AGENT_"):
            monkeypatch.delenv(key)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        + text
        + "\n[clock]\nenabled = false\n[cache]\nenabled = false\n"
    )
    return path


@pytest.mark.parametrize(
    ("disk", "code", "status"),
    [
        ("min_free_bytes = 0\nmin_free_ratio = 0.0\nmin_inodes_free_ratio = 0.0\n", 0, "ok"),
        ("min_free_bytes = 1152921504606846976\n", 1, "problem"),
    ],
    ids=["healthy-exit-0", "problem-exit-1"],
)
def test_once_json_exit_code(disk: str, code: int, status: str, tmp_path: Path) -> None:
    config = write(tmp_path, f'[disk]\npaths = ["{tmp_path}"]\n' + disk)

    result = runner.invoke(app, ["once", "--config", str(config), "-o", "json"])

    assert result.exit_code == code, result.output
    readings = {item["check"]: item["reading"] for item in json.loads(result.stdout)}
    assert sorted(readings) == ["disk", "memory"]
    assert readings["disk"]["status"] == status


def test_once_table(tmp_path: Path) -> None:
    config = write(tmp_path, f'[disk]\npaths = ["{tmp_path}"]\nmin_free_bytes = 0\nmin_free_ratio = 0.0\n')

    result = runner.invoke(app, ["once", "--config", str(config)])

    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].split() == ["CHECK", "STATUS", "REASON", "DURATION", "MESSAGE"]
    assert [line.split()[:2] for line in result.stdout.splitlines()[1:]] == [["disk", "ok"], ["memory", "ok"]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[disk]\nbogus = 1\n",
            "error: unknown config key 'disk.bogus' in {path} or RUNNER_AGENT_* environment\n",
        ),
        ("servr = 'x'\n", "error: unknown config key 'servr' in {path} or RUNNER_AGENT_* environment\n"),
        (
            "[memory]\ninterval_s = -1\n",
            "error: invalid value for 'memory.interval_s' in {path} or "
            "RUNNER_AGENT_* environment: Input should be greater than 0\n",
        ),
    ],
    ids=["unknown-nested-key", "unknown-top-key", "invalid-value"],
)
def test_config_errors_name_the_key(text: str, message: str, tmp_path: Path) -> None:
    config = write(tmp_path, text)

    result = runner.invoke(app, ["config", "--config", str(config)])

    assert result.exit_code == 1
    assert result.stderr == message.format(path=config)


def test_unknown_key_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNER_AGENT_CONFIG", str(write(tmp_path, "")))
    monkeypatch.setenv("RUNNER_AGENT_SENDER__BATCHSIZE", "5")

    result = runner.invoke(app, ["config"])

    assert result.exit_code == 1 and "unknown config key 'sender.batchsize'" in result.stderr


def test_missing_explicit_config_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["config", "--config", str(tmp_path / "nope.toml")])

    assert result.exit_code == 1
    assert result.stderr == f"error: config file {tmp_path / 'nope.toml'} does not exist\n"


@pytest.mark.parametrize("fmt", ["toml", "json"], ids=["toml", "json"])
def test_config_redacts_the_token(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write(tmp_path, 'token = "rct_secret-agent-token"\n')
    monkeypatch.setenv("RUNNER_AGENT_SERVER", "http://127.0.0.1:9999")  # env beats the file

    result = runner.invoke(app, ["config", "--config", str(config), "-o", fmt])

    assert result.exit_code == 0
    assert "rct_secret-agent-token" not in result.stdout
    data = json.loads(result.stdout) if fmt == "json" else tomllib.loads(result.stdout)
    assert data["token"] == "<redacted>"
    assert data["server"] == "http://127.0.0.1:9999"
    assert data["clock"]["enabled"] is False


def test_unknown_output_format_lists_the_allowed(tmp_path: Path) -> None:
    result = runner.invoke(app, ["once", "--config", str(write(tmp_path, "")), "-o", "yaml"])

    assert result.exit_code == 2 and "'table', 'json'" in result.stderr


def test_once_does_not_consume_the_daemons_oom_count(tmp_path: Path) -> None:
    import shutil

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "proc"
    proc = tmp_path / "proc"
    shutil.copytree(fixtures / "oom-1", proc)
    state = tmp_path / "state"
    state.mkdir()
    (state / "memory-oom.json").write_text(json.dumps({str(proc.resolve()): 7}))
    shutil.copy(fixtures / "oom-2" / "vmstat", proc / "vmstat")  # two kills since the daemon's reading
    config = write(tmp_path, f'[memory]\nproc_root = "{proc}"\n[disk]\nenabled = false\n')

    first = runner.invoke(app, ["once", "--config", str(config), "-o", "json"])
    second = runner.invoke(app, ["once", "--config", str(config), "-o", "json"])

    for result in (first, second):
        assert result.exit_code == 1
        (item,) = json.loads(result.stdout)
        assert (item["reading"]["reason"], item["reading"]["oom_kills"]) == ("OomKills", 2)
    assert json.loads((state / "memory-oom.json").read_text()) == {str(proc.resolve()): 7}
