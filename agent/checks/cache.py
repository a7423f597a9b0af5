"""The cache check: a content digest per configured cache directory, so a runner whose cache differs
from its pool's majority can be spotted.

A local manifest keyed by (relative path, size, mtime_ns, inode) lets an incremental pass rehash only
what changed. That cannot see corruption that kept size and mtime (a bit flip, a restored mtime), so
a full rehash runs on a slower schedule; the reading's `full_rehash` says which pass produced it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class _Entry:
    size: int
    mtime_ns: int
    inode: int
    digest: str


def collect(config: CacheConfig) -> CacheReading:
    if not config.caches:
        return CacheReading(
            status=Status.unknown, reason="NoCaches", message="no cache directories configured"
        )
    if config.low_priority:
        _lower_priority()
    with _lock:
        db = _open_manifest(config)
        try:
            digests = [
                _digest_cache(db, key, Path(path), config) for key, path in sorted(config.caches.items())
            ]
        finally:
            if db is not None:
                db.close()
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


def _digest_cache(db: sqlite3.Connection | None, key: str, root: Path, config: CacheConfig) -> CacheDigest:
    if not root.is_dir():
        return CacheDigest(key=key, path=str(root))
    now = time.time()
    old: dict[str, _Entry] = {}
    full = True
    if db is not None:
        row = db.execute("SELECT last_full_at, root FROM passes WHERE key = ?", (key,)).fetchone()
        if row is not None and row[1] == str(root) and now - row[0] < config.full_rehash_interval_s:
            full = False
            old = {
                r[0]: _Entry(r[1], r[2], r[3], r[4])
                for r in db.execute(
                    "SELECT relpath, size, mtime_ns, inode, digest FROM files WHERE key = ?", (key,)
                )
            }
    tree = hashlib.blake2b() if config.algorithm == "blake2b" else hashlib.sha256()
    buf = bytearray(BLOCK)
    changed: list[tuple[str, _Entry]] = []
    seen: set[str] = set()
    files = 0
    total = 0
    for rel, st, target in sorted(_walk(root), key=lambda t: t[0]):
        if target is not None:  # symlinks count by where they point, never followed
            file_digest = "link:" + target
            size = 0
        else:
            size = st.st_size
            prev = old.get(rel)
            if prev is not None and (prev.size, prev.mtime_ns, prev.inode) == (
                size,
                st.st_mtime_ns,
                st.st_ino,
            ):
                file_digest = prev.digest
            else:
                try:
                    file_digest = hash_file(root / rel, config.algorithm, buf)
                except OSError:
                    continue  # vanished or unreadable between walk and read: not part of this snapshot
                changed.append((rel, _Entry(size, st.st_mtime_ns, st.st_ino, file_digest)))
        seen.add(rel)
        files += 1
        total += size
        tree.update(f"{rel}\0{size}\0{file_digest}\n".encode("utf-8", "surrogateescape"))
    if db is not None:
        _save(db, key, root, full, now, changed, [r for r in old if r not in seen])
    return CacheDigest(
        key=key,
        path=str(root),
        digest=f"{config.algorithm}:{tree.hexdigest()}",
        files=files,
        bytes=total,
        full_rehash=full,
    )


def hash_file(path: Path, algorithm: str, buf: bytearray | None = None) -> str:
    h = hashlib.blake2b() if algorithm == "blake2b" else hashlib.sha256()
    buf = buf if buf is not None else bytearray(BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            h.update(view[:n])
    return h.hexdigest()


def _walk(root: Path) -> Iterator[tuple[str, os.stat_result, str | None]]:
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(root / rel_dir if rel_dir else root) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)
            elif stat.S_ISREG(st.st_mode):
                yield rel, st, None
            elif stat.S_ISLNK(st.st_mode):
                try:
                    yield rel, st, os.readlink(entry.path)
                except OSError:
                    continue


def _open_manifest(config: CacheConfig) -> sqlite3.Connection | None:
    if not config.state_dir:
        return None  # no state dir: every pass is a full one
    try:
        Path(config.state_dir).mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(Path(config.state_dir) / "cache-manifest.sqlite", timeout=30)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS files (key TEXT, relpath TEXT, size INTEGER, mtime_ns INTEGER, "
            "inode INTEGER, digest TEXT, PRIMARY KEY (key, relpath))"
        )
        db.execute("CREATE TABLE IF NOT EXISTS passes (key TEXT PRIMARY KEY, root TEXT, last_full_at REAL)")
        return db
    except sqlite3.Error:
        return None


def _save(
    db: sqlite3.Connection,
    key: str,
    root: Path,
    full: bool,
    now: float,
    changed: list[tuple[str, _Entry]],
    gone: list[str],
) -> None:
    try:
        with db:
            if full:
                db.execute("DELETE FROM files WHERE key = ?", (key,))
                db.execute(
                    "INSERT OR REPLACE INTO passes (key, root, last_full_at) VALUES (?, ?, ?)",
                    (key, str(root), now),
                )
            else:
                db.executemany("DELETE FROM files WHERE key = ? AND relpath = ?", [(key, r) for r in gone])
            db.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
                [(key, rel, e.size, e.mtime_ns, e.inode, e.digest) for rel, e in changed],
            )
    except sqlite3.Error:
        pass  # the digest stands; the next pass simply rehashes more


def _lower_priority() -> None:
    """Lower this thread's CPU and IO priority; each collect runs on a fresh thread, so nothing leaks."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    with contextlib.suppress(OSError, AttributeError, ValueError, psutil.Error):
        psutil.Process(threading.get_native_id()).ionice(psutil.IOPRIO_CLASS_IDLE)
