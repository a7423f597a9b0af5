"""The cache check: a content digest per configured cache directory, so a runner whose cache differs
from its pool's majority can be spotted.

A local manifest keyed by (relative path, size, mtime_ns, inode) lets an incremental pass rehash only
what changed. That cannot see corruption that kept size and mtime (a bit flip, a restored mtime), so
a full rehash runs on a slower schedule; the reading's `full_rehash` says which pass produced it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
from pydantic import Field

from agent.checks.base import CheckConfig
from common.readings import CacheDigest, CacheReading, Status

NAME = "cache"
BLOCK = 1 << 20

# One pass at a time per manifest: SQLite would serialise writers anyway, and two passes over the same
# cache only double the IO.
_lock = threading.Lock()


class CacheConfig(CheckConfig):
    interval_s: float = Field(default=600.0, gt=0)
    jitter_s: float = Field(default=30.0, ge=0)
    timeout_s: float = Field(default=3600.0, gt=0)
    caches: dict[str, str] = Field(default_factory=dict, description="key -> directory")
    state_dir: str | None = Field(default=None, description="where the manifest lives; the agent's")
    full_rehash_interval_s: float = Field(default=86400.0, gt=0)
    algorithm: str = Field(default="blake2b", pattern="^(blake2b|sha256)$")
    low_priority: bool = True


def collect(config: CacheConfig) -> CacheReading:
    if not config.caches:
        return CacheReading(
            status=Status.unknown, reason="NoCaches", message="no cache directories configured"
        )
    if config.low_priority:
        _lower_priority()
    with _lock:
        digests = [_digest_cache(key, Path(path), config) for key, path in sorted(config.caches.items())]
    missing = [d for d in digests if d.digest is None]
    if missing and len(missing) == len(digests):
        return CacheReading(
            status=Status.unknown,
            reason="CacheMissing",
            caches=digests,
            message="; ".join(f"{d.key}: {d.path} not readable" for d in missing),
        )
    reading = CacheReading(caches=digests)
    if missing:
        reading.message = "; ".join(f"{d.key}: {d.path} not readable" for d in missing)
    return reading


def _digest_cache(key: str, root: Path, config: CacheConfig) -> CacheDigest:
    if not root.is_dir():
        return CacheDigest(key=key, path=str(root))
    now = time.time()
    manifest = _manifest_path(config, key)
    previous = _load(manifest, root, config.algorithm)
    full = previous is None or now - previous[0] >= config.full_rehash_interval_s
    # relpath -> "size:mtime_ns:inode:digest". One string per file because this loop runs once per file
    # and a 20k-file cache must re-verify in a fraction of a second: JSON decodes 20k strings about
    # six times faster than 20k four-element lists.
    old: dict[str, str] = {} if full or previous is None else previous[1]
    entries: dict[str, str] = {}
    tree = hashlib.blake2b() if config.algorithm == "blake2b" else hashlib.sha256()
    buf = bytearray(BLOCK)
    changed = 0
    files = 0
    total = 0
    base = str(root)
    for rel, size, mtime_ns, inode, target in sorted(_walk(base)):
        if target is not None:  # symlinks count by where they point, never followed
            file_digest = "link:" + target
        else:
            stamp = f"{size}:{mtime_ns}:{inode}:"
            prev = old.pop(rel, None)
            if isinstance(prev, str) and prev.startswith(stamp):
                file_digest = prev[len(stamp) :]
                entries[rel] = prev
            else:
                try:
                    file_digest = hash_file(os.path.join(base, rel), config.algorithm, buf)
                except OSError:
                    continue  # vanished or unreadable between walk and read: not part of this snapshot
                entries[rel] = stamp + file_digest
                changed += 1
        files += 1
        total += size
        tree.update(f"{rel}\0{size}\0{file_digest}\n".encode("utf-8", "surrogateescape"))
    if manifest is not None and (full or changed or old):  # `old` now holds what vanished from disk
        last_full = now if full or previous is None else previous[0]
        _store(
            manifest,
            {"root": base, "algorithm": config.algorithm, "last_full_at": last_full, "files": entries},
        )
    return CacheDigest(
        key=key,
        path=base,
        digest=f"{config.algorithm}:{tree.hexdigest()}",
        files=files,
        bytes=total,
        full_rehash=full,
    )


def hash_file(path: str | Path, algorithm: str, buf: bytearray | None = None) -> str:
    h = hashlib.blake2b() if algorithm == "blake2b" else hashlib.sha256()
    buf = buf if buf is not None else bytearray(BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            h.update(view[:n])
    return h.hexdigest()


def _walk(base: str) -> Iterator[tuple[str, int, int, int, str | None]]:
    """(relpath, size, mtime_ns, inode, symlink target) for regular files and symlinks, never following
    links; directories are told apart by d_type, so only files cost a stat call."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(os.path.join(base, rel_dir) if rel_dir else base) as it:
                entries = list(it)
        except OSError:
            continue
        prefix = rel_dir + "/" if rel_dir else ""
        for entry in entries:
            rel = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(rel)
                    continue
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    yield rel, st.st_size, st.st_mtime_ns, st.st_ino, None
                elif stat.S_ISLNK(st.st_mode):
                    yield rel, 0, st.st_mtime_ns, st.st_ino, os.readlink(entry.path)
            except OSError:
                continue


def _manifest_path(config: CacheConfig, key: str) -> Path | None:
    if not config.state_dir:
        return None  # no state dir: every pass is a full one
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(config.state_dir) / f"cache-manifest-{name}.json"


def _load(path: Path | None, root: Path, algorithm: str) -> tuple[float, dict[str, str]] | None:
    """(time of the last full pass, entries), or None when there is no usable manifest."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    # A manifest for another directory or another algorithm is no evidence about this one.
    if not isinstance(data, dict) or data.get("root") != str(root) or data.get("algorithm") != algorithm:
        return None
    files, last_full = data.get("files"), data.get("last_full_at")
    if not isinstance(files, dict) or not isinstance(last_full, int | float):
        return None
    return float(last_full), files  # values are checked where used: a bad one only forces a rehash


def _store(path: Path, data: dict[str, Any]) -> None:
    """One JSON document written atomically: a 20k-entry manifest loads in milliseconds, far faster than
    as many SQLite rows, and a crash mid-write leaves the previous manifest intact."""
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data, separators=(",", ":")))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()  # the digest stands; the next pass simply rehashes more


def _lower_priority() -> None:
    """Lower this thread's CPU and IO priority; each collect runs on a fresh thread, so nothing leaks."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    with contextlib.suppress(OSError, AttributeError, ValueError, psutil.Error):
        psutil.Process(threading.get_native_id()).ionice(psutil.IOPRIO_CLASS_IDLE)
