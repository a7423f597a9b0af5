"""Agent benchmarks, each a ratio against a baseline measured in the same run.

1. Resident memory of a real agent process after an hour of schedule, time compressed (intervals
   divided by 120, run for 30 s), reporting to a loopback sink. Target: < 40 MB.
2. Re-verifying an unchanged cache (20k files / 1 GB; --small: 2k files / 100 MB) incrementally vs a
   full rehash. Target: >= 20x faster.
3. Full rehash throughput vs `b2sum` (and sha256 vs `sha256sum`) over the same files, both at the
   check's low CPU and IO priority. Target: >= 0.8.

Run: python bench/agent.py [--small] [--seconds 30]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.checks import cache
from tests.agent import agent_process
from tests.agent.sink import running_sink
from tests.chrony import chrony_pair


def memory_after_an_hour(tmp: Path, seconds: float, speedup: float) -> None:
    cache_dir = tmp / "mem-cache"
    make_files(cache_dir, files=500, total_bytes=5 << 20)
    with running_sink() as sink, _maybe_chrony(tmp) as ntp:
        clock = {"servers": [ntp.good, ntp.skewed], "interval_s": 60.0} if ntp else {"enabled": False}
        config = agent_process.write_config(
            tmp,
            sink.url,
            sink.token,
            disk={"interval_s": 30.0, "jitter_s": 2.0},
            memory={"interval_s": 30.0, "jitter_s": 2.0},
            cache={"interval_s": 600.0, "jitter_s": 30.0, "caches": {"deps": str(cache_dir)}},
            clock=clock,
        )
        text = config.read_text().replace('log_level = "DEBUG"', f'log_level = "INFO"\nspeedup = {speedup}')
        config.write_text(text)
        proc = agent_process.start(config, tmp / "bench-agent.log")
        peak = 0
        try:
            ps = psutil.Process(proc.pid)
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and proc.poll() is None:
                peak = max(peak, ps.memory_info().rss)
                time.sleep(0.25)
            rss = ps.memory_info().rss
            uss = ps.memory_full_info().uss
        finally:
            agent_process.stop(proc)
        mb = 2**20
        print(
            f"[1] agent RSS after {seconds * speedup / 60:.0f} simulated minutes ({seconds:.0f} s at "
            f"x{speedup:g}): {rss / mb:.1f} MB (peak {peak / mb:.1f} MB, USS {uss / mb:.1f} MB), "
            f"{len(sink.store.reports)} reports delivered{'' if ntp else ', clock check off (no chronyd)'}"
            f"; target < 40 MB -> RSS/target {rss / mb / 40:.2f}"
        )
        floor = stack_rss()
        print(
            f"    baseline in this run: the mandated libraries alone (pydantic models, pydantic-settings, "
            f"requests, APScheduler, psutil, ntplib; not typer, which `run` does not import) = "
            f"{floor / mb:.1f} MB RSS; the agent adds {(rss - floor) / mb:.1f} MB over them "
            f"-> RSS/baseline {rss / floor:.2f}"
        )
        if floor / mb >= 40:
            print("    the 40 MB target is below what the mandated libraries need on this interpreter")


def stack_rss(extra: str = "") -> int:
    code = (
        "import sys, warnings\n"
        "sys.modules['charset_normalizer'] = None; sys.modules['chardet'] = None\n"
        "warnings.simplefilter('ignore')\n"
        "import common.reports, pydantic_settings, requests, apscheduler.schedulers.background\n"
        f"import psutil, ntplib, sqlite3{', ' + extra if extra else ''}\n"
        "print(psutil.Process().memory_info().rss)\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


def _maybe_chrony(tmp: Path):  # type: ignore[no-untyped-def]
    from contextlib import nullcontext

    if shutil.which("chronyd") is None:
        return nullcontext(None)
    (tmp / "chrony").mkdir(exist_ok=True)
    return chrony_pair(tmp / "chrony")


def make_files(root: Path, files: int, total_bytes: int) -> None:
    size = total_bytes // files
    chunk = os.urandom(size + 4096)
    for i in range(files):
        # about 50 files a directory, two levels deep, like a package cache
        d = root / f"d{i // 1000:03d}" / f"e{(i // 50) % 20:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.bin").write_bytes(chunk[i % 4096 : i % 4096 + size])


def evict(root: Path) -> None:
    """Drop only these files from the page cache (never the whole machine's), so a pass reads the disk."""
    for path in root.rglob("*.bin"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def best_of(n: int, fn: Callable[[], object]) -> float:
    """The fastest of n runs: on a shared machine the minimum is the least noisy estimate."""
    best = float("inf")
    for _ in range(n):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def on_fresh_thread(cfg: cache.CacheConfig) -> Callable[[], object]:
    """Run a pass the way the agent does: on its own thread, so the check's lowered CPU/IO priority
    stays on that thread and never slows the baseline tools started from the main thread."""

    def run() -> object:
        box: list[object] = []
        thread = threading.Thread(target=lambda: box.append(cache.collect(cfg)))
        thread.start()
        thread.join()
        return box[0]

    return run


def cache_benchmarks(tmp: Path, files: int, total_bytes: int, repeat: int) -> None:
    root = tmp / "cache"
    print(f"    creating {files} files, {total_bytes / 2**30:.2f} GiB ...", flush=True)
    make_files(root, files, total_bytes)
    os.sync()
    cfg = cache.CacheConfig(caches={"deps": str(root)}, state_dir=str(tmp / "state"))
    forced_full = cfg.model_copy(update={"full_rehash_interval_s": 1e-9})

    # Warm the page cache once, so every measurement below reads the same cached bytes.
    on_fresh_thread(forced_full)()
    t_full = best_of(repeat, on_fresh_thread(forced_full))
    on_fresh_thread(cfg)()
    t_incr = best_of(repeat * 2, on_fresh_thread(cfg))
    t_cold = best_of(repeat, lambda: (evict(root), on_fresh_thread(forced_full)()))
    size = f"{files} files / {total_bytes / 2**30:.2f} GiB"
    print(
        f"[2] unchanged cache of {size}: incremental re-verify {t_incr:.3f} s vs full rehash {t_full:.2f} s "
        f"with the files in the page cache -> {t_full / t_incr:.1f}x faster; vs full rehash {t_cold:.2f} s "
        f"reading from disk (only our files evicted) -> {t_cold / t_incr:.1f}x (target >= 20x)"
    )

    listing = tmp / "files.txt"
    listing.write_text("\0".join(sorted(str(p) for p in root.rglob("*.bin"))))
    for algorithm, tool in (("blake2b", "b2sum"), ("sha256", "sha256sum")):
        if shutil.which(tool) is None:
            print(f"[3] {tool} not installed: skipped")
            continue
        cfg_a = forced_full.model_copy(update={"algorithm": algorithm})
        # At the priority the check runs at (nice 19, idle IO class): on a busy machine both wait alike,
        # so the ratio measures the hashing, not the scheduler.
        command = f"nice -n 19 ionice -c 3 xargs -0 {tool} < {listing} > /dev/null"
        t_ours = best_of(repeat, on_fresh_thread(cfg_a))
        t_tool = best_of(repeat, lambda command=command: subprocess.run(command, shell=True, check=True))
        mbps = total_bytes / 2**20 / t_ours
        print(
            f"[3] full rehash {algorithm}: {t_ours:.2f} s ({mbps:.0f} MiB/s) vs `{tool}` {t_tool:.2f} s "
            f"-> throughput ratio {t_tool / t_ours:.2f} (target >= 0.8)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true", help="2k files / 100 MB instead of 20k / 1 GB")
    parser.add_argument("--seconds", type=float, default=30.0, help="wall time of the memory run")
    parser.add_argument("--speedup", type=float, default=120.0)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="best of N for every timing")
    args = parser.parse_args()
    files, total = (2_000, 100 << 20) if args.small else (20_000, 1 << 30)
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as raw:
        tmp = Path(raw)
        if not args.skip_memory:
            memory_after_an_hour(tmp, args.seconds, args.speedup)
        cache_benchmarks(tmp, files, total, args.repeat)


if __name__ == "__main__":
    main()
