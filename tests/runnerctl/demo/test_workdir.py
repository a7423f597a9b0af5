"""The demo directory: made and marked by the demo, reused afresh, never someone else's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runnerctl.demo.workdir import MARKER, PID_FILE, DemoError, prepare, running_pid
from tests.servers import REPO, runnerctl_cmd


def test_a_new_directory_is_made_and_marked(tmp_path: Path) -> None:
    assert prepare(tmp_path / "demo") == f"created {tmp_path / 'demo'}/"
    assert (tmp_path / "demo" / MARKER).exists()


def test_a_previous_demo_is_replaced_and_nothing_else(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    prepare(demo)
    (demo / "runnerctl.db").write_text("old")
    (demo / "notes.txt").write_text("mine")
    assert "previous demo's database was replaced" in prepare(demo)
    assert not (demo / "runnerctl.db").exists()
    assert (demo / "notes.txt").read_text() == "mine"


def test_a_directory_the_demo_did_not_make_is_refused(tmp_path: Path) -> None:
    (tmp_path / "precious.db").write_text("data")
    with pytest.raises(DemoError, match="is not a runnerctl demo directory"):
        prepare(tmp_path)
    assert (tmp_path / "precious.db").read_text() == "data"


def test_a_directory_whose_controller_still_runs_is_refused(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    prepare(demo)
    # A live process that looks like a controller: its command line names one.
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "controller"])
    try:
        (demo / PID_FILE).write_text(f"{sleeper.pid}\n")
        assert running_pid(demo) == sleeper.pid
        with pytest.raises(DemoError, match=f"still runs from .* \\(pid {sleeper.pid}\\)"):
            prepare(demo)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert running_pid(demo) is None
    prepare(demo)


def test_the_cli_says_what_to_do_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "precious.db").write_text("data")
    done = subprocess.run(
        runnerctl_cmd("demo", "--dir", str(tmp_path), "--exit"),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        f"error: {tmp_path} exists and is not a runnerctl demo directory; choose an empty or new one with --dir"
    )
