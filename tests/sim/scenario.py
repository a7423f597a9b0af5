"""The knobs of a simulated fleet: its pools, its tests, its cadence and the events injected into it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from tests.sim.events import Event, Instant

Sharding = Literal["static", "dynamic", "label"]


@dataclass(frozen=True)
class PoolSpec:
    """One pool of runners.

    `sharding`: `static` sends shard k always to runner k (shards = runners); `dynamic` sends each shard job
    to any runner; `label` splits the runners into `label_groups` labelled groups and shard k only runs on
    group k mod G. `suites` routes whole suites to the pool (None: every suite).
    Ephemeral pools get a fresh runner id per job on `hosts` machines; `runners` is then the job concurrency.
    `caches` are the cache keys the agents digest; `agents=False` leaves the pool without readings.
    """

    name: str
    runners: int = 8
    images: tuple[str, ...] = ()
    ephemeral: bool = False
    runners_per_machine: int = 1
    hosts: int = 4
    sharding: Sharding = "dynamic"
    shards: int | None = None
    label_groups: int = 2
    suites: tuple[str, ...] | None = None
    labels: tuple[str, ...] = ()
    provider: str = "github"
    caches: tuple[str, ...] = ("pip", "build")
    agents: bool = True  # False: no health agent on this pool, so no reports at all

    def image_names(self) -> tuple[str, ...]:
        return self.images or (f"{self.name}-2026.09.1",)

    def shard_count(self) -> int:
        if self.sharding == "static":
            return self.runners
        return self.shards or self.runners


@dataclass(frozen=True)
class Scenario:
    """Defaults give one static-sharded pool of 8 runners, 300 tests, two quiet days."""

    pools: tuple[PoolSpec, ...] = (PoolSpec("linux", 8, sharding="static"),)
    n_tests: int = 300
    suites: tuple[str, ...] = ("unit", "api", "storage", "build", "net", "ui")
    duration_days: float = 2.0
    start: datetime = datetime(2026, 9, 21, tzinfo=UTC)
    jobs_per_runner_per_hour: float = 2.0
    diurnal: float = 0.4
    report_interval_minutes: float = 5.0
    commits_per_hour: float = 1.5
    retry_prob: float = 0.3
    noisy_test_fraction: float = 0.2
    base_fail_max: float = 0.02
    runner_noise: float = 0.4  # log-sd of each healthy agent's multiplier on background failure rates
    skip_fraction: float = 0.02
    job_abort_prob: float = 0.002
    report_loss_prob: float = 0.002
    readings_lead_minutes: float = 15.0
    catalog_seed: int = 0
    events: tuple[Event, ...] = ()

    @property
    def duration_s(self) -> float:
        return self.duration_days * 86400.0

    @property
    def end(self) -> datetime:
        return self.start + timedelta(days=self.duration_days)

    def offset_s(self, at: Instant) -> float:
        """Seconds after `start` of an absolute or relative instant."""
        if isinstance(at, timedelta):
            return at.total_seconds()
        if at.tzinfo is None:
            raise ValueError(f"naive datetime {at!r} in a scenario: give it a timezone")
        return (at - self.start).total_seconds()
