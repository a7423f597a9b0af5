"""The demo's directory: made by the demo, marked as its own, and the only place it deletes from.

A second run reuses it and starts afresh (the old demo database goes: its history ends at the old run's
time). A directory the demo did not make is never touched, and one whose controller still runs is
refused, so two demos never share a database.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

MARKER = ".runnerctl-demo"
PID_FILE = "controller.pid"
# Everything a run writes; only these are removed when a demo directory is reused.
OWN_FILES = (
    "runnerctl.db",
    "runnerctl.db-wal",
    "runnerctl.db-shm",
    "runnerctl.db-journal",
    "controller.log",
    "history.ndjson",
    "ci-standin.jsonl",
    "agent.toml",
    "env",
    PID_FILE,
)


class DemoError(Exception):
    """The demo cannot go on; the message says what happened and what to do."""


def prepare(directory: Path) -> str:
    """Make `directory` ready for a fresh demo; returns what was done, for the operator."""
    if directory.exists() and not directory.is_dir():
        raise DemoError(f"{directory} is a file, not a directory; choose another with --dir")
    if (directory / MARKER).exists():
        running = running_pid(directory)
        if running is not None:
            raise DemoError(
                f"a demo controller still runs from {directory} (pid {running}): stop it with Ctrl-C where "
                f"it runs (or `kill {running}`), or choose another directory with --dir"
            )
        for name in OWN_FILES:
            (directory / name).unlink(missing_ok=True)
        return f"reusing {directory}/: the previous demo's database was replaced by a fresh one"
    if directory.exists() and any(directory.iterdir()):
        raise DemoError(
            f"{directory} exists and is not a runnerctl demo directory; choose an empty or new one with --dir"
        )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text("made by `runnerctl demo`; safe to delete\n", encoding="utf-8")
    return f"created {directory}/"


def running_pid(directory: Path) -> int | None:
    """The pid of this directory's controller if it still runs."""
    try:
        pid = int((directory / PID_FILE).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, and someone else's: do not guess it away
    cmdline = Path(f"/proc/{pid}/cmdline")
    with contextlib.suppress(OSError):
        # A pid reused by an unrelated process since: not our controller. (Empty while it starts.)
        found = cmdline.read_bytes()
        if found and b"controller" not in found:
            return None
    return pid
