"""A small ext4 filesystem in a file, loop-mounted: a disk that really fills up, for the disk-full test."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def problem() -> str | None:
    """None when this host lets us make and loop-mount a filesystem, else why not."""
    if os.geteuid() != 0:
        return "loop-mounting a filesystem needs root"
    if shutil.which("mkfs.ext4") is None:
        return "mkfs.ext4 is not installed (apt-get install e2fsprogs)"
    return None


def skip_unless_possible() -> None:
    reason = problem()
    if reason:
        if os.environ.get("RUNNERCTL_REQUIRE_ALL") == "1":
            pytest.fail(f"{reason} (RUNNERCTL_REQUIRE_ALL=1)", pytrace=False)
        pytest.skip(reason)


@contextmanager
def loop_filesystem(tmp: Path, size_mib: int) -> Iterator[Path]:
    """A fresh ext4 of `size_mib` mounted on tmp/vol (no blocks reserved for root: we run as root)."""
    image, mount = tmp / "vol.img", tmp / "vol"
    with image.open("wb") as out:
        out.truncate(size_mib << 20)
    subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], check=True, capture_output=True, timeout=30
    )
    mount.mkdir()
    done = subprocess.run(["mount", "-o", "loop", str(image), str(mount)], capture_output=True, timeout=30)
    if done.returncode != 0:
        reason = f"cannot loop-mount a filesystem here: {done.stderr.decode(errors='replace').strip()}"
        if os.environ.get("RUNNERCTL_REQUIRE_ALL") == "1":
            pytest.fail(f"{reason} (RUNNERCTL_REQUIRE_ALL=1)", pytrace=False)
        pytest.skip(reason)
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], capture_output=True, timeout=30).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)
        with contextlib.suppress(OSError):
            image.unlink()


def fill(directory: Path) -> Path:
    """Write a file until the filesystem has no block left; returns it (delete it to free the space)."""
    filler = directory / "filler"
    chunk = b"\0" * (64 << 10)
    with contextlib.suppress(OSError), filler.open("wb") as out:
        while True:
            out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    # The last partial chunk: fill the remaining bytes one small write at a time.
    with contextlib.suppress(OSError), filler.open("ab") as out:
        while True:
            out.write(b"\0" * 512)
            out.flush()
            os.fsync(out.fileno())
    return filler
