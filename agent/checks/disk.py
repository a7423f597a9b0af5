"""The disk check: space, inodes and read-only state of the runner's filesystems.

Read-only is probed, not remembered (statvfs flag plus a real write), so a fixed disk turns healthy
by itself — node-problem-detector's log-pattern check never clears.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

import psutil
from pydantic import Field

from agent.checks.base import CheckConfig
from common.readings import DiskPath, DiskReading, Status

NAME = "disk"
GIB = 1 << 30


class DiskConfig(CheckConfig):
    interval_s: float = Field(default=30.0, gt=0)
    timeout_s: float = Field(default=10.0, gt=0)
    paths: tuple[str, ...] = Field(default=(), description="empty: /, the runner's work dir and /tmp")
    probe_dir: str | None = Field(default=None, description="where the write probe writes; the work dir")
    min_free_bytes: int = Field(default=GIB, ge=0)
    min_free_ratio: float = Field(default=0.05, ge=0, le=1)
    min_inodes_free_ratio: float = Field(default=0.05, ge=0, le=1)


def collect(config: DiskConfig) -> DiskReading:
    paths = config.paths or ("/", "/tmp")  # noqa: S108 - measured, never written to
    results = [_measure(path, config) for path in dict.fromkeys(paths)]
    problems: list[tuple[str, str]] = []
    for item in results:
        problems.extend(_judge(item, config))
    if problems:
        reason = problems[0][0]
        return DiskReading(
            status=Status.problem,
            reason=reason,
            message="; ".join(m for _, m in problems)[:2000],
            paths=results,
        )
    if not any(item.total_bytes is not None for item in results):
        return DiskReading(
            status=Status.unknown, reason="NoReadablePath", message="no configured path exists", paths=results
        )
    return DiskReading(paths=results)


def _measure(path: str, config: DiskConfig) -> DiskPath:
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return DiskPath(path=path, mount_point=None, device=f"error: {exc.strerror or exc}")
    total = st.f_blocks * st.f_frsize
    free = st.f_bavail * st.f_frsize  # what an unprivileged job can still write, not the root reserve
    inodes_total = st.f_files
    inodes_free = st.f_favail
    mount_point, device = _mount_of(path)
    probe_ok: bool | None = None
    if config.probe_dir is not None and _same_path(config.probe_dir, path):
        probe_ok = _write_probe(path)
    return DiskPath(
        path=path,
        mount_point=mount_point,
        device=device,
        total_bytes=total,
        free_bytes=free,
        free_ratio=(free / total) if total else None,
        inodes_total=inodes_total,
        inodes_free=inodes_free,
        # Filesystems without inode accounting (btrfs, some FUSE) report 0 total: no ratio, not 0 %.
        inodes_free_ratio=(inodes_free / inodes_total) if inodes_total else None,
        read_only=bool(st.f_flag & os.ST_RDONLY),
        write_probe_ok=probe_ok,
    )


def _judge(item: DiskPath, config: DiskConfig) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    full = (
        item.free_bytes is not None
        and bool(item.total_bytes)
        and (item.free_bytes < config.min_free_bytes or (item.free_ratio or 0) < config.min_free_ratio)
    )
    # A write refused on a full disk says "full", not "read-only"; the statvfs flag is unambiguous.
    if item.read_only or (item.write_probe_ok is False and not full):
        how = "mounted read-only" if item.read_only else "write probe failed"
        out.append(("ReadonlyFilesystem", f"{item.path}: {how}"))
    if full and item.free_bytes is not None:
        free = f"{item.free_bytes / GIB:.2f} GiB free ({(item.free_ratio or 0):.1%})"
        out.append(("DiskFull", f"{item.path}: {free}"))
    if item.inodes_free_ratio is not None and item.inodes_free_ratio < config.min_inodes_free_ratio:
        out.append(("InodesExhausted", f"{item.path}: {item.inodes_free_ratio:.1%} inodes free"))
    return out


def _write_probe(directory: str) -> bool | None:
    """Create, write, fsync and remove a small file: False when the filesystem refuses writes, None when
    we cannot tell (our own permissions, not a sick disk)."""
    probe = Path(directory) / f".runner-agent-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, b"runner-agent write probe\n")
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EIO):
            return False
        return None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return True


def _mount_of(path: str) -> tuple[str | None, str | None]:
    try:
        real = os.path.realpath(path)
        best: tuple[str | None, str | None] = (None, None)
        best_len = -1
        for part in psutil.disk_partitions(all=True):
            mp = part.mountpoint
            inside = real == mp or real.startswith(mp.rstrip("/") + "/")
            if inside and len(mp) > best_len:
                best, best_len = (mp, part.device), len(mp)
        return best
    except (OSError, RuntimeError):
        return None, None


def _same_path(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)
