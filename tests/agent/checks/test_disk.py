from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.checks import disk
from common.readings import Status


def test_real_paths_ok(tmp_path: Path) -> None:
    config = disk.DiskConfig(
        paths=("/", str(tmp_path)),
        probe_dir=str(tmp_path),
        min_free_bytes=0,
        min_free_ratio=0,
        min_inodes_free_ratio=0,
    )

    reading = disk.collect(config)

    assert reading.status is Status.ok
    work = reading.paths[1]
    assert work.path == str(tmp_path)
    assert work.total_bytes and work.free_bytes is not None and 0 <= (work.free_ratio or 0) <= 1
    assert work.read_only is False and work.write_probe_ok is True
    assert work.mount_point and work.device
    assert list(tmp_path.iterdir()) == []  # the probe cleaned up after itself


@pytest.mark.parametrize(
    ("limits", "reason"),
    [
        ({"min_free_bytes": 1 << 60}, "DiskFull"),
        ({"min_free_ratio": 1.0}, "DiskFull"),
        ({"min_inodes_free_ratio": 1.0}, "InodesExhausted"),
    ],
    ids=["free-bytes", "free-ratio", "inodes"],
)
def test_thresholds(limits: dict[str, float], reason: str, tmp_path: Path) -> None:
    base = {"min_free_bytes": 0, "min_free_ratio": 0.0, "min_inodes_free_ratio": 0.0}
    config = disk.DiskConfig(paths=(str(tmp_path),), **{**base, **limits})

    reading = disk.collect(config)

    assert (reading.status, reading.reason) == (Status.problem, reason)
    assert str(tmp_path) in (reading.message or "")


def test_missing_path_is_unknown(tmp_path: Path) -> None:
    reading = disk.collect(disk.DiskConfig(paths=(str(tmp_path / "gone"),)))

    assert (reading.status, reading.reason) == (Status.unknown, "NoReadablePath")


@pytest.fixture
def readonly_mount(tmp_path: Path) -> Iterator[Path]:
    target = tmp_path / "ro"
    target.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(target)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"mount not permitted here: {done.stderr.strip()}")
    try:
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=False)


def test_readonly_mount_is_a_problem(readonly_mount: Path) -> None:
    config = disk.DiskConfig(
        paths=(str(readonly_mount),),
        probe_dir=str(readonly_mount),
        min_free_bytes=0,
        min_free_ratio=0,
        min_inodes_free_ratio=0,
    )

    reading = disk.collect(config)

    assert (reading.status, reading.reason) == (Status.problem, "ReadonlyFilesystem")
    item = reading.paths[0]
    assert item.read_only is True
    assert item.write_probe_ok is False
    assert item.mount_point == str(readonly_mount)
    assert item.device == "tmpfs"


def test_readonly_clears_after_remount(readonly_mount: Path) -> None:
    config = disk.DiskConfig(
        paths=(str(readonly_mount),),
        probe_dir=str(readonly_mount),
        min_free_bytes=0,
        min_free_ratio=0,
        min_inodes_free_ratio=0,
    )
    assert disk.collect(config).status is Status.problem

    subprocess.run(["mount", "-o", "remount,rw", str(readonly_mount)], check=True)

    assert disk.collect(config).status is Status.ok
