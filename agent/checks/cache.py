"""The cache check: a content digest per configured cache directory, so a runner whose cache differs
from its pool's majority can be spotted.

A local manifest keyed by (relative path, size, mtime_ns, inode) lets an incremental pass rehash only
what changed. That cannot see corruption that kept size and mtime (a bit flip, a restored mtime), so
a full rehash runs on a slower schedule; the reading's `full_rehash` says which pass produced it.

Re-verifying an unchanged cache is the common case (every 10 minutes, for days), so it costs one `stat`
per file and nothing more: the daemon remembers, per cache, a fingerprint of the stamps the last pass
saw (see `_Verified`) and the digest they produced. Only when the fingerprint differs is the manifest
read to find which files changed; it is written back only when something did.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from stat import S_ISLNK, S_ISREG
from typing import Any

import psutil
from pydantic import Field

from agent.checks.base import CheckConfig
from common.readings import CacheDigest, CacheReading, Status

NAME = "cache"
# Hashes as fast as 1 MiB blocks (measured on 50 kB and 300 MB files), for a quarter of the buffer.
BLOCK = 256 << 10
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC

# One pass at a time per manifest: SQLite would serialise writers anyway, and two passes over the same
# cache only double the IO.
_lock = threading.Lock()


@dataclass(frozen=True)
class _Verified:
    """What the last pass over one cache found, kept in memory between passes (a few hundred bytes a
    cache, where the 20k-entry manifest would be megabytes).

    `fingerprint` is the sum of Python's hash of each file's (relpath, size, mtime_ns, inode, link
    target): order-independent, so the re-verify pass needs neither a sort nor a per-file lookup. Any
    change (a file added, removed, renamed, resized, touched or replaced) changes it unless the changed
    files' 64-bit hashes happen to sum to the same value: about one chance in 2**64.
    It is only meaningful inside this process (str hashes are salted per process), so it is never stored
    on disk; after a restart the first pass compares file by file with the manifest.
    """

    root: str
    algorithm: str
    last_full_at: float
    fingerprint: int
    files: int
    bytes: int
    digest: str


_verified: dict[Path, _Verified] = {}


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
    base = str(root)
    manifest = _manifest_path(config, key)
    known = _verified.get(manifest) if manifest is not None else None
    if (
        known is not None
        and (known.root, known.algorithm) == (base, config.algorithm)
        and now - known.last_full_at < config.full_rehash_interval_s
        and _survey(base) == (known.files, known.fingerprint)
    ):
        return CacheDigest(
            key=key, path=base, digest=known.digest, files=known.files, bytes=known.bytes, full_rehash=False
        )
    previous = _load(manifest, root, config.algorithm)
    full = previous is None or now - previous[0] >= config.full_rehash_interval_s
    # relpath -> "size:mtime_ns:inode:digest". One string per file: JSON decodes 20k strings about six
    # times faster than 20k four-element lists, and after a restart this is the re-verify pass.
    old: dict[str, str] = {} if full or previous is None else previous[1]
    entries: dict[str, str] = {}
    tree = hashlib.blake2b() if config.algorithm == "blake2b" else hashlib.sha256()
    buf = bytearray(BLOCK)
    changed = 0
    files = 0
    total = 0
    fingerprint = 0
    for item in sorted(chain.from_iterable(_walk(base))):
        rel, size, mtime_ns, inode, target = item
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
        fingerprint += hash(item)
        tree.update(f"{rel}\0{size}\0{file_digest}\n".encode("utf-8", "surrogateescape"))
    digest = f"{config.algorithm}:{tree.hexdigest()}"
    last_full = now if full or previous is None else previous[0]
    if manifest is not None:
        if full or changed or old:  # `old` now holds what vanished from disk
            _store(
                manifest,
                {"root": base, "algorithm": config.algorithm, "last_full_at": last_full, "files": entries},
            )
        _verified[manifest] = _Verified(base, config.algorithm, last_full, fingerprint, files, total, digest)
    return CacheDigest(key=key, path=base, digest=digest, files=files, bytes=total, full_rehash=full)


def hash_file(path: str | Path, algorithm: str, buf: bytearray | None = None) -> str:
    h = hashlib.blake2b() if algorithm == "blake2b" else hashlib.sha256()
    buf = buf if buf is not None else bytearray(BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            h.update(view[:n])
    return h.hexdigest()


def _survey(base: str) -> tuple[int, int]:
    """(files, fingerprint) of the tree as it is now: all the unchanged-cache pass does. Sizes are inside
    the fingerprint, so a match also vouches for the byte count."""
    files = fingerprint = 0
    for found in _walk(base):
        files += len(found)
        fingerprint += sum(map(hash, found))
    return files, fingerprint


def _walk(base: str) -> Iterator[list[tuple[str, int, int, int, str | None]]]:
    """Per directory, (relpath, size, mtime_ns, inode, symlink target) of its regular files and symlinks,
    never following links. Directories are told apart by d_type and listed through a descriptor, so each
    file costs one `fstatat` of a single name rather than a walk of its whole path; a list a directory
    keeps the per-file Python work to the stat call and one tuple."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            # The configured root may be a symlink (~/.cache -> /data/cache); nothing below it is followed.
            fd = (
                os.open(base + "/" + rel_dir, _DIR_FLAGS | os.O_NOFOLLOW)
                if rel_dir
                else os.open(base, _DIR_FLAGS)
            )
        except OSError:
            continue  # gone, unreadable, or swapped for a symlink since it was listed
        prefix = rel_dir + "/" if rel_dir else ""
        found: list[tuple[str, int, int, int, str | None]] = []
        try:
            with os.scandir(fd) as it:
                for entry in it:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(prefix + entry.name)
                            continue
                        st = entry.stat(follow_symlinks=False)
                        if S_ISREG(st.st_mode):
                            found.append((prefix + entry.name, st.st_size, st.st_mtime_ns, st.st_ino, None))
                        elif S_ISLNK(st.st_mode):
                            target = os.readlink(entry.name, dir_fd=fd)
                            found.append((prefix + entry.name, 0, st.st_mtime_ns, st.st_ino, target))
                    except OSError:
                        continue
        except OSError:
            pass  # a directory that cannot be listed to the end counts with what was read of it
        finally:
            os.close(fd)
        yield found


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
