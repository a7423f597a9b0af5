"""The controller's cordon directive on the agent's side: the operator's command runs once per change,
a failed command is retried, and a restarted agent neither repeats a command nor misses an uncordon."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from agent.directives import Directives, DirectiveSettings


def answer(cordoned: bool, runner: str = "gh-3") -> dict[str, object]:
    return {
        "accepted": 1,
        "new": [1],
        "duplicate": [],
        "directives": [{"runner": runner, "cordoned": cordoned, "reason": "inc-1"}],
    }


def log_command(log: Path, word: str) -> str:
    """A command that appends the word and the reason the agent passes in the environment."""
    script = log.parent / "record.py"
    script.write_text(
        "import os, sys\n"
        f"with open({str(log)!r}, 'a') as out:\n"
        "    out.write(sys.argv[1] + ' ' + os.environ['RUNNER_AGENT_CORDON_REASON'] + '\\n')\n"
    )
    return f"{sys.executable} {script} {word}"


def settle(directives: Directives) -> None:
    deadline = time.monotonic() + 10
    while directives._busy.locked() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_commands_run_once_per_change_and_survive_a_restart(tmp_path: Path) -> None:
    log = tmp_path / "log"
    settings = DirectiveSettings(on_cordon=log_command(log, "stop"), on_uncordon=log_command(log, "start"))
    directives = Directives("gh-3", settings, tmp_path)
    directives.handle(answer(False))  # never cordoned: nothing to start
    directives.handle(answer(True, runner="gh-1"))  # another runner's directive: not ours
    settle(directives)
    assert not log.exists()
    for _ in range(3):
        directives.handle(answer(True))
        settle(directives)
    assert log.read_text() == "stop inc-1\n"
    restarted = Directives("gh-3", settings, tmp_path)
    restarted.handle(answer(True))
    settle(restarted)
    assert log.read_text() == "stop inc-1\n"
    restarted.handle(answer(False))
    settle(restarted)
    assert log.read_text() == "stop inc-1\nstart inc-1\n"


def test_a_failing_command_is_retried_on_the_next_answer(tmp_path: Path) -> None:
    flag = tmp_path / "fixed"
    script = tmp_path / "check.py"
    script.write_text(f"import pathlib, sys\nsys.exit(0 if pathlib.Path({str(flag)!r}).exists() else 3)\n")
    directives = Directives("gh-3", DirectiveSettings(on_cordon=f"{sys.executable} {script}"), tmp_path)
    directives.handle(answer(True))
    settle(directives)
    assert directives.applied is None
    flag.touch()
    directives.handle(answer(True))
    settle(directives)
    assert directives.applied is True
