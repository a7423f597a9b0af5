"""When each check runs: its own interval and jitter on an APScheduler background scheduler, never
overlapping itself (max_instances=1, coalesce), each on a pool thread so a slow check blocks no other."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from types import ModuleType

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from agent.checks.base import CheckConfig

log = logging.getLogger(__name__)


def build(
    jobs: list[tuple[ModuleType, CheckConfig]],
    run: Callable[[ModuleType, CheckConfig], None],
    speedup: float = 1.0,
    first_run_spread_s: float = 0.0,
) -> BackgroundScheduler:
    """A scheduler (not started) with one job per enabled check; `speedup` divides every interval."""
    scheduler = BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(max_workers=max(1, len(jobs)))},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
        timezone="UTC",
    )
    now = datetime.now().astimezone()
    for index, (module, config) in enumerate(jobs):
        if not config.enabled:
            continue
        interval = config.interval_s / speedup
        scheduler.add_job(
            run,
            IntervalTrigger(seconds=interval, jitter=config.jitter_s / speedup or None, timezone="UTC"),
            args=(module, config),
            id=module.NAME,
            name=f"check {module.NAME}",
            # Run at start, staggered a little so all checks do not hit the disk in the same instant.
            next_run_time=now + timedelta(seconds=index * first_run_spread_s / speedup),
        )
    return scheduler
