"""runnerctl config: contexts for several real controllers, written safely, secrets kept out of view."""

from __future__ import annotations

import os
import stat
import subprocess
import tomllib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.controller.api.test_ingest import result
from tests.servers import REPO, Controller, runnerctl_cmd, running_controller


def ctl(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNNERCTL_")}
    env["RUNNERCTL_CONFIG"] = str(config)
    return subprocess.run(runnerctl_cmd(*args), capture_output=True, text=True, cwd=REPO, env=env, timeout=60)


@pytest.fixture(scope="module")
def two_controllers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Controller, Controller]]:
    """Two controllers, each knowing one runner, so a context switch shows in what `get` prints."""
    with ExitStack() as stack:
        found = []
        for name in ("lab", "prod"):
            controller = stack.enter_context(running_controller(tmp_path_factory.mktemp(name)))
            runner = {"id": f"{name}-01", "machine": f"{name}-vm", "pool": name}
            assert controller.post("/v1/results", json=[result(runner=runner)]).status_code == 200
            found.append(controller)
        yield found[0], found[1]


def test_contexts_switch_between_controllers(
    two_controllers: tuple[Controller, Controller], tmp_path: Path
) -> None:
    lab, prod = two_controllers
    config = tmp_path / "nested" / "config.toml"
    token_file = tmp_path / "prod-token"
    token_file.write_text(prod.admin_token + "\n")

    created = ctl(
        config, "config", "set-context", "lab", "--server", lab.url + "/", "--token", lab.admin_token
    )
    assert (created.returncode, created.stdout) == (0, 'Context "lab" created.\n')
    assert (
        ctl(
            config, "config", "set-context", "prod", "--server", prod.url, "--token-file", str(token_file)
        ).returncode
        == 0
    )
    assert ctl(config, "config", "use-context", "lab").stdout == 'Switched to context "lab".\n'
    assert ctl(config, "config", "current-context").stdout == "lab\n"
    assert ctl(config, "get", "runners", "-o", "name").stdout == "runner/lab-01\n"
    assert ctl(config, "--context", "prod", "get", "runners", "-o", "name").stdout == "runner/prod-01\n"

    assert ctl(config, "config", "use-context", "prod").returncode == 0
    assert ctl(config, "get", "runners", "-o", "name").stdout == "runner/prod-01\n"
    # The token file is read at each use: rotating it needs no config change.
    token_file.write_text(lab.admin_token)
    rotated = ctl(config, "get", "runners")
    assert rotated.returncode == 1 and "unknown or revoked token" in rotated.stderr

    listing = ctl(config, "config", "get-contexts").stdout.splitlines()
    assert listing == [
        "CURRENT  NAME  SERVER" + " " * (len(lab.url) - 4) + "AUTH",
        f"         lab   {lab.url}  token",
        f"*        prod  {prod.url}  token-file {token_file}",
    ]
    assert ctl(config, "config", "get-contexts", "-o", "name").stdout == "context/lab\ncontext/prod\n"


def test_file_is_private_and_replaced_whole(tmp_path: Path) -> None:
    config = tmp_path / "runnerctl" / "config.toml"
    assert (
        ctl(
            config, "config", "set-context", "a", "--server", "http://127.0.0.1:1", "--token", "rct_a"
        ).returncode
        == 0
    )
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    inode = config.stat().st_ino
    assert ctl(config, "config", "set-context", "a", "--token", "rct_b").stdout == 'Context "a" modified.\n'
    assert config.stat().st_ino != inode  # a new file renamed over the old one, not an edit in place
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert tomllib.loads(config.read_text()) == {
        "contexts": {"a": {"server": "http://127.0.0.1:1", "token": "rct_b"}}
    }
    assert [p.name for p in config.parent.iterdir()] == ["config.toml"]  # no temporary left behind


def test_view_redacts_tokens_unless_raw(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    ctl(config, "config", "set-context", "a", "--server", "http://127.0.0.1:1", "--token", "rct_secret")
    ctl(config, "config", "set-context", "b", "--server", "http://127.0.0.1:2", "--token-file", "/run/tok")
    ctl(config, "config", "use-context", "b")
    view = ctl(config, "config", "view")
    assert "rct_secret" not in view.stdout
    assert tomllib.loads(view.stdout) == {
        "current-context": "b",
        "contexts": {
            "a": {"server": "http://127.0.0.1:1", "token": "REDACTED"},
            "b": {"server": "http://127.0.0.1:2", "token-file": "/run/tok"},
        },
    }
    assert "token: rct_secret" in ctl(config, "config", "view", "--raw", "-o", "yaml").stdout
    assert '"token": "REDACTED"' in ctl(config, "config", "view", "-o", "json").stdout


def test_delete_context(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    ctl(config, "config", "set-context", "a", "--server", "http://127.0.0.1:1")
    ctl(config, "config", "use-context", "a")
    deleted = ctl(config, "config", "delete-context", "a")
    assert deleted.stdout == f"deleted context a from {config}\n"
    assert "a was the current context; none is current now" in deleted.stderr
    assert tomllib.loads(config.read_text()) == {"contexts": {}}
    gone = ctl(config, "config", "delete-context", "a")
    assert (gone.returncode, gone.stderr) == (1, f"error: no context named 'a' in {config}\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("set-context", "new"), "context 'new' is new: give its --server URL"),
        (("set-context", "x", "--server", "ftp://h"), "'ftp://h' is not a controller URL"),
        (("set-context", "a b", "--server", "http://h"), "'a b' is not a context name"),
        (("set-context", "x", "--server", "http://h", "--token", "t", "--token-file", "f"), "not both"),
        (("view", "-o", "xml"), "unknown output format 'xml'; allowed: toml, yaml, json"),
    ],
    ids=["new-without-server", "bad-url", "bad-name", "two-tokens", "bad-format"],
)
def test_usage_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = ctl(tmp_path / "config.toml", "config", *args)
    assert done.returncode == 2
    assert message in " ".join(done.stderr.split())
    assert not (tmp_path / "config.toml").exists()


def test_missing_context_and_unreadable_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    unknown = ctl(config, "config", "use-context", "nope")
    assert unknown.returncode == 1 and "no context named 'nope'" in unknown.stderr
    assert ctl(config, "config", "current-context").stderr.startswith("error: current-context is not set")
    config.write_text("contexts = [")
    broken = ctl(config, "config", "get-contexts")
    assert broken.returncode == 1 and broken.stderr.startswith(f"error: cannot read {config}:")
    assert "Traceback" not in broken.stderr
