from __future__ import annotations

import threading
import time
from types import ModuleType, SimpleNamespace

from agent import schedule
from agent.checks.base import CheckConfig


def test_slow_check_neither_overlaps_itself_nor_blocks_others() -> None:
    runs: dict[str, int] = {"slow": 0, "fast": 0}
    active = {"slow": 0}
    overlap = threading.Event()
    lock = threading.Lock()

    def run(module: ModuleType, config: CheckConfig) -> None:
        name = module.NAME
        with lock:
            runs[name] += 1
            if name == "slow":
                active["slow"] += 1
                if active["slow"] > 1:
                    overlap.set()
        if name == "slow":
            time.sleep(1.0)
            with lock:
                active["slow"] -= 1

    slow = SimpleNamespace(NAME="slow")
    fast = SimpleNamespace(NAME="fast")
    jobs = [(slow, CheckConfig(interval_s=0.1, jitter_s=0)), (fast, CheckConfig(interval_s=0.1, jitter_s=0))]
    scheduler = schedule.build(jobs, run)  # type: ignore[arg-type]
    scheduler.start()
    time.sleep(1.5)
    scheduler.shutdown(wait=True)

    assert not overlap.is_set()
    assert runs["slow"] <= 2  # coalesced while the first run was still going
    assert runs["fast"] >= 8


def test_speedup_divides_intervals_and_disabled_checks_are_left_out() -> None:
    jobs = [
        (SimpleNamespace(NAME="a"), CheckConfig(interval_s=60)),
        (SimpleNamespace(NAME="b"), CheckConfig(enabled=False)),
    ]
    scheduler = schedule.build(jobs, lambda m, c: None, speedup=120)  # type: ignore[arg-type]

    (job,) = scheduler.get_jobs()
    assert job.id == "a" and job.trigger.interval.total_seconds() == 0.5
