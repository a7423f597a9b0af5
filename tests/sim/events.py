"""Injectable events of a simulated fleet: each one cause of failures (or of bad readings), with known truth.

Times are absolute (aware `datetime`) or a `timedelta` after `Scenario.start`, so a scenario keeps its shape
when its start moves. Tests are named by id or by index into the scenario's catalogue (`build_catalog`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

Instant = datetime | timedelta
Dimension = Literal["disk", "memory", "clock", "cache", "unknown"]
TestRef = str | int

DIMENSIONS: tuple[Dimension, ...] = ("disk", "memory", "clock", "cache", "unknown")


@dataclass(frozen=True)
class SickRunner:
    """From `onset` many distinct tests fail on the runner; its readings show `dimension` a little earlier."""

    runner: str
    dimension: Dimension
    onset: Instant
    end: Instant | None = None
    fail_prob: float = 0.6


@dataclass(frozen=True)
class SlowDisk:
    """The runner's workspace fills linearly over `days`; IO tests fail more as free space drops below
    `threshold` (the truth's onset is when it crosses it)."""

    runner: str
    start: Instant
    days: float = 3.0
    fail_prob: float = 0.7
    threshold: float = 0.03


@dataclass(frozen=True)
class SickMachine:
    """A host under several (or ephemeral) runners: every runner on it fails."""

    machine: str
    dimension: Dimension
    onset: Instant
    end: Instant | None = None
    fail_prob: float = 0.6


@dataclass(frozen=True)
class SickPool:
    """Every runner of a pool fails (a poisoned shared cache, a broken proxy); readings show `dimension` on
    all of them (for `cache`, they agree with each other on the bad digest)."""

    pool: str
    dimension: Dimension
    onset: Instant
    end: Instant | None = None
    fail_prob: float = 0.5


@dataclass(frozen=True)
class BadImage:
    """A new image rolled out at `onset` to `fraction_of_pool` of a pool's machines breaks many tests there.

    Readings stay healthy unless `dimension="cache"`: then its hosts agree on a digest the pool majority
    does not have (or another dimension: `"clock"` for an image whose NTP setup is broken). With `job_share` below 1 it strikes only that share of the jobs on its hosts (a race
    in a driver, a service that starts or does not), failing many of their tests at once.
    """

    image: str
    pool: str
    onset: Instant
    fraction_of_pool: float = 0.4
    fail_prob: float = 0.5
    dimension: Dimension = "unknown"
    job_share: float = 1.0
    rolled_back: Instant | None = None  # its hosts return to the pool's own image then
    breaks: int | None = None  # only this many of the pool's tests fail there (a library a few need)
    first_on: tuple[str, ...] = ()  # runners whose hosts get it before any other host


@dataclass(frozen=True)
class Outage:
    """Fleet-wide: network tests fail on most runners at once, and NTP servers stop answering there."""

    start: Instant
    minutes: float = 30.0
    fraction_of_runners: float = 0.85
    fail_prob: float = 0.9
    other_fail_prob: float = 0.05


@dataclass(frozen=True)
class WarningRunner:
    """Clearly bad readings in `dimension` and no extra failures (except resource-sensitive tests)."""

    runner: str
    dimension: Dimension
    start: Instant | None = None
    end: Instant | None = None


@dataclass(frozen=True)
class PeriodicPressure:
    """Readings show pressure for `duty` of every `period_hours` (a nightly build, a memory-hungry job).
    A warning, not a sick runner."""

    runner: str
    dimension: Dimension = "memory"
    period_hours: float = 8.0
    duty: float = 0.25


@dataclass(frozen=True)
class SilentAgent:
    """The runner's (or host's) agent sends nothing in [start, end): failures without readings.

    A sick entity whose agents are all silent around its onset has `unknown` as its truth dimension,
    since no reading can confirm one.
    """

    runner: str
    start: Instant | None = None
    end: Instant | None = None


@dataclass(frozen=True)
class FlakyTest:
    """Fails with probability `p` anywhere (or only on `pool`), independently on each attempt, so it often
    passes on retry."""

    test: TestRef
    p: float = 0.1
    pool: str | None = None


@dataclass(frozen=True)
class FlakyCluster:
    """Tests sharing a flaky dependency (a test service, a fixture): with probability `p` per pipeline run
    and attempt, all of them fail together, on whichever runners their shards ran. Co-failure without a
    sick runner."""

    tests: tuple[TestRef, ...]
    p: float = 0.05


@dataclass(frozen=True)
class BrokenTest:
    """Fails on every run everywhere whose commit landed in [since, until) (commits land at both)."""

    test: TestRef
    since: Instant
    until: Instant | None = None


@dataclass(frozen=True)
class PlatformTest:
    """Fails on `pool` (with `p`: nine runs in ten is still that platform's), passes elsewhere."""

    test: TestRef
    pool: str
    p: float = 1.0


@dataclass(frozen=True)
class ResourceSensitiveTest:
    """Fails (with `p`) only where the runner's readings show pressure in `dimension` at that moment."""

    test: TestRef
    dimension: Dimension
    p: float = 0.8


@dataclass(frozen=True)
class Interaction:
    """One test fails repeatedly on one runner only (a locale, a path): not a sick runner."""

    test: TestRef
    runner: str
    p: float = 0.6


@dataclass(frozen=True)
class HardShard:
    """Every test of shard `shard` of `pool` gets `p` added to its base failure rate, wherever it runs.

    Under static sharding this makes one runner look bad while it is the tests that are hard.
    """

    pool: str
    shard: int
    p: float = 0.02


Event = (
    SickRunner
    | SlowDisk
    | SickMachine
    | SickPool
    | BadImage
    | Outage
    | WarningRunner
    | PeriodicPressure
    | SilentAgent
    | FlakyTest
    | FlakyCluster
    | BrokenTest
    | PlatformTest
    | ResourceSensitiveTest
    | Interaction
    | HardShard
)
