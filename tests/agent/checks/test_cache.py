from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from agent.checks import cache
from common.readings import Status


def make_cache(root: Path, files: int = 20) -> None:
    for i in range(files):
        sub = root / f"d{i % 4}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i}.bin").write_bytes(os.urandom(1000 + i))
    (root / "link").symlink_to("d0/f0.bin")


def config(tmp_path: Path, root: Path, **kw: object) -> cache.CacheConfig:
    return cache.CacheConfig(caches={"deps": str(root)}, state_dir=str(tmp_path / "state"), **kw)


def count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    hashed: list[str] = []
    real = cache.hash_file

    def counting(path: str | Path, algorithm: str, buf: bytearray | None = None) -> str:
        hashed.append(os.path.basename(path))
        return real(path, algorithm, buf)

    monkeypatch.setattr(cache, "hash_file", counting)
    return hashed


def test_first_pass_is_full_then_incremental_rehashes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    make_cache(root)
    hashed = count_hashes(monkeypatch)

    first = cache.collect(config(tmp_path, root)).caches[0]
    n_first = len(hashed)
    second = cache.collect(config(tmp_path, root)).caches[0]

    assert first.full_rehash is True and second.full_rehash is False
    assert n_first == 20 and len(hashed) == 20  # the unchanged cache was re-verified without reading a file
    assert first.digest == second.digest and first.digest and first.digest.startswith("blake2b:")
    assert (first.files, first.bytes) == (21, sum(1000 + i for i in range(20)))


def test_changed_file_is_rehashed_and_changes_the_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    make_cache(root)
    before = cache.collect(config(tmp_path, root)).caches[0]
    hashed = count_hashes(monkeypatch)

    (root / "d1" / "f1.bin").write_bytes(b"new content")
    (root / "d2" / "f2.bin").unlink()
    after = cache.collect(config(tmp_path, root)).caches[0]

    assert hashed == ["f1.bin"]
    assert after.digest != before.digest and after.files == 20 and after.full_rehash is False


def test_in_place_corruption_with_mtime_restored(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    make_cache(root)
    good = cache.collect(config(tmp_path, root)).caches[0]
    victim = root / "d3" / "f3.bin"
    st = victim.stat()
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF  # one flipped bit's worth of damage, same size
    with open(victim, "r+b") as f:  # in place: same inode
        f.write(data)
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))

    incremental = cache.collect(config(tmp_path, root)).caches[0]
    full = cache.collect(config(tmp_path, root, full_rehash_interval_s=1e-9)).caches[0]

    # By design the incremental pass trusts (size, mtime, inode) and cannot see this: digest unchanged.
    assert incremental.full_rehash is False and incremental.digest == good.digest
    # The slower full rehash reads every byte and catches it.
    assert full.full_rehash is True and full.digest != good.digest


def test_digest_is_independent_of_manifest_and_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        (root / "x").mkdir(parents=True)
        (root / "x" / "1").write_bytes(b"one")
        (root / "2").write_bytes(b"two")
    with_manifest = cache.collect(config(tmp_path, a)).caches[0]
    without = cache.collect(cache.CacheConfig(caches={"deps": str(b)})).caches[0]

    assert with_manifest.digest == without.digest
    expected = hashlib.blake2b()
    for rel, content in sorted([("2", b"two"), ("x/1", b"one")]):
        expected.update(f"{rel}\0{len(content)}\0{hashlib.blake2b(content).hexdigest()}\n".encode())
    assert with_manifest.digest == "blake2b:" + expected.hexdigest()


@pytest.mark.parametrize(
    ("caches", "status", "reason"),
    [({}, Status.unknown, "NoCaches"), ({"gone": "/nonexistent/cache"}, Status.unknown, "CacheMissing")],
    ids=["none-configured", "missing-dir"],
)
def test_unknown_when_it_cannot_look(caches: dict[str, str], status: Status, reason: str) -> None:
    reading = cache.collect(cache.CacheConfig(caches=caches))

    assert (reading.status, reading.reason) == (status, reason)


def test_sha256_algorithm(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    make_cache(root, files=3)

    digest = cache.collect(config(tmp_path, root, algorithm="sha256")).caches[0].digest

    assert digest and digest.startswith("sha256:")


def test_hashing_thread_runs_at_low_priority_and_nothing_else_does(tmp_path: Path) -> None:
    import threading

    import psutil

    seen: dict[str, object] = {}
    real = cache.hash_file

    def spy(path: str | Path, algorithm: str, buf: bytearray | None = None) -> str:
        tid = threading.get_native_id()
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, tid)
        seen["ioclass"] = psutil.Process(tid).ionice().ioclass
        return real(path, algorithm, buf)

    root = tmp_path / "cache"
    make_cache(root, files=2)
    main_nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    mp = pytest.MonkeyPatch()
    mp.setattr(cache, "hash_file", spy)
    try:
        worker = threading.Thread(target=cache.collect, args=(config(tmp_path, root),))
        worker.start()
        worker.join(30)
    finally:
        mp.undo()

    assert seen == {"nice": 19, "ioclass": psutil.IOPRIO_CLASS_IDLE}
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main_nice


def test_reverify_notices_every_kind_of_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cache"
    make_cache(root)
    cfg = config(tmp_path, root)
    cache.collect(cfg)
    unchanged = cache.collect(cfg).caches[0]  # the in-memory fast path from here on
    hashed = count_hashes(monkeypatch)

    def after() -> tuple[str | None, list[str]]:
        hashed.clear()
        reading = cache.collect(cfg).caches[0]
        assert reading.full_rehash is False
        return reading.digest, list(hashed)

    (root / "d0" / "new.bin").write_bytes(b"added")
    added, rehashed = after()
    assert added != unchanged.digest and rehashed == ["new.bin"]

    (root / "d0" / "new.bin").rename(root / "d1" / "moved.bin")  # same inode, size and mtime
    moved, rehashed = after()
    assert moved not in (added, unchanged.digest) and rehashed == ["moved.bin"]

    (root / "d1" / "moved.bin").unlink()
    removed, rehashed = after()
    assert removed == unchanged.digest and rehashed == []

    st = (root / "d2" / "f2.bin").stat()
    os.utime(root / "d2" / "f2.bin", ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    touched, rehashed = after()
    assert touched == unchanged.digest and rehashed == ["f2.bin"]  # same bytes: same digest

    (root / "link").unlink()
    (root / "link").symlink_to("d1/f1.bin")
    relinked, rehashed = after()
    assert relinked != unchanged.digest and rehashed == []  # a link counts by its target, never read


def test_restarted_agent_reverifies_from_the_manifest_without_reading_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    make_cache(root)
    first = cache.collect(config(tmp_path, root)).caches[0]
    monkeypatch.setattr(cache, "_verified", {})  # what a new agent process starts with
    hashed = count_hashes(monkeypatch)

    again = cache.collect(config(tmp_path, root)).caches[0]

    assert (again.full_rehash, again.digest, hashed) == (False, first.digest, [])


def test_cache_root_may_be_a_symlink_but_nothing_below_it_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    make_cache(real, files=3)
    (real / "d0" / "outside").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "big.bin").write_bytes(b"x" * 5000)
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)

    reading = cache.collect(config(tmp_path, tmp_path / "alias")).caches[0]

    # three files and two links (the file link and the directory link), none of elsewhere's bytes
    assert (reading.files, reading.bytes) == (5, sum(1000 + i for i in range(3)))
