"""Every command's --help ends with examples, and every example is a command line runnerctl accepts;
shell completion is offered and completes runner ids from the controller."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from runnerctl.main import app
from tests.controller.api.test_ingest import result
from tests.servers import REPO, Controller, runnerctl_cmd, running_controller

ROOT = typer.main.get_command(app)


def is_group(command: Any) -> bool:
    return hasattr(command, "commands")


# typer carries its own copy of click: walk its commands by shape, not by class.
def leaves(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    if is_group(command):
        for name, sub in sorted(command.commands.items()):
            yield from leaves(sub, (*path, name))


COMMANDS = list(leaves(ROOT))


def examples_of(command: Any) -> list[str]:
    epilog = command.epilog or ""
    lines = epilog.replace("\b", "").strip().splitlines()
    assert lines and lines[0] == "Examples:", f"{command.name}: the epilog should start with 'Examples:'"
    return [line.strip() for line in lines[1:] if line.strip()]


def parse(argv: list[str]) -> Any:
    """Parse a command line as runnerctl would, running option checks but not the command."""
    command = ROOT
    ctx = command.make_context("runnerctl", argv)
    while is_group(command):
        name, sub, rest = command.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
        assert sub is not None and name is not None
        command = sub
        ctx = command.make_context(name, rest, parent=ctx)
    return ctx


@pytest.mark.parametrize(
    ("path", "command"),
    [(p, c) for p, c in COMMANDS if not is_group(c) or not p],
    ids=[" ".join(p) or "runnerctl" for p, c in COMMANDS if not is_group(c) or not p],
)
def test_help_has_real_examples(path: tuple[str, ...], command: Any) -> None:
    examples = examples_of(command)
    assert examples, f"{' '.join(path)} has no examples"
    for example in examples:
        words = shlex.split(example)
        for cut in ("|", ">"):
            words = words[: words.index(cut)] if cut in words else words
        assert words[0] == "runnerctl", example
        # Raises click.UsageError on an unknown option or a bad value; the example shows its own command.
        assert parse(words[1:]).command_path.startswith(" ".join(("runnerctl", *path))), example

    shown = subprocess.run(
        runnerctl_cmd(*path, "--help"), capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert shown.returncode == 0
    assert f"Usage: runnerctl {' '.join(path)}".rstrip() in shown.stdout
    assert "Examples:\n" + "".join(f"    {e}\n" for e in examples) in shown.stdout


def test_completion_is_offered() -> None:
    script = subprocess.run(
        runnerctl_cmd("--show-completion", "bash"), capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert "_RUNNERCTL_COMPLETE=complete_bash" in script.stdout
    assert "complete -o default -F _runnerctl_completion runnerctl" in script.stdout


def complete(words: str, env: dict[str, str]) -> list[str]:
    full = (
        os.environ
        | env
        | {
            "_RUNNERCTL_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split(" ")) - 1),
        }
    )
    done = subprocess.run(runnerctl_cmd(), capture_output=True, text=True, cwd=REPO, env=full, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    # Completion reads what any database serves alike: SQLite alone suffices.
    with running_controller(tmp_path_factory.mktemp("completion")) as running:
        yield running


def test_completion_of_commands_and_runner_ids(controller: Controller) -> None:
    runners = [{"id": f"linux-0{i}", "machine": f"vm-{i}", "pool": "linux"} for i in (1, 2)]
    runners.append({"id": "mac-01", "machine": "mac-vm", "pool": "mac"})
    assert controller.post("/v1/results", json=[result(runner=r) for r in runners]).status_code == 200
    env = {"RUNNERCTL_SERVER": controller.url, "RUNNERCTL_TOKEN": controller.admin_token}
    assert complete("runnerctl g", env) == ["get"]
    assert complete("runnerctl describe runner li", env) == ["linux-01", "linux-02"]
    assert complete("runnerctl cordon ", env) == ["linux-01", "linux-02", "mac-01"]
    # An unreachable controller completes nothing, quietly.
    assert complete("runnerctl explain runner ", env | {"RUNNERCTL_SERVER": "http://127.0.0.1:9"}) == []
