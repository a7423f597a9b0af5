from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.checks import memory
from common.readings import Status

PROC = Path(__file__).resolve().parents[2] / "fixtures" / "proc"


@pytest.mark.parametrize(
    ("tree", "status", "reason", "psi_full_avg60"),
    [
        ("ok", Status.ok, None, 0.25),
        ("no-psi", Status.ok, None, None),
        ("pressure", Status.problem, "MemoryPressure", 35.0),
    ],
    ids=["ok", "psi-missing", "pressure"],
)
def test_reading_from_proc_tree(
    tree: str, status: Status, reason: str | None, psi_full_avg60: float | None, tmp_path: Path
) -> None:
    reading = memory.collect(memory.MemoryConfig(proc_root=str(PROC / tree), state_dir=str(tmp_path)))

    assert (reading.status, reading.reason) == (status, reason)
    assert reading.total_bytes == 8_000_000 * 1024
    assert reading.available_bytes == 6_000_000 * 1024
    assert reading.available_ratio == pytest.approx(0.75)
    assert reading.swap_used_bytes == 500_000 * 1024
    assert reading.psi_full_avg60 == psi_full_avg60
    assert reading.oom_kills == 0  # first reading: the counter is stored, nothing is charged


@pytest.mark.parametrize("persisted", [True, False], ids=["state-dir", "in-memory"])
def test_oom_kills_since_previous_reading(persisted: bool, tmp_path: Path) -> None:
    root = tmp_path / "proc"
    shutil.copytree(PROC / "oom-1", root)
    config = memory.MemoryConfig(proc_root=str(root), state_dir=str(tmp_path) if persisted else None)

    first = memory.collect(config)
    shutil.copy(PROC / "oom-2" / "vmstat", root / "vmstat")  # the kernel counter went 7 -> 9
    second = memory.collect(config)
    third = memory.collect(config)

    assert (first.oom_kills, first.status) == (0, Status.ok)
    assert (second.oom_kills, second.status, second.reason) == (2, Status.problem, "OomKills")
    assert (third.oom_kills, third.status) == (0, Status.ok)  # a condition that clears by itself


def test_missing_proc_is_unknown_not_sick(tmp_path: Path) -> None:
    reading = memory.collect(memory.MemoryConfig(proc_root=str(tmp_path / "nothing")))

    assert (reading.status, reading.reason) == (Status.unknown, "NoMeminfo")


def test_real_proc() -> None:
    reading = memory.collect(memory.MemoryConfig())

    assert reading.status in (Status.ok, Status.problem)
    assert reading.total_bytes and reading.available_bytes is not None
