"""Ready-made scenarios: the product story, everything at once, a quiet fleet and a storm.

Tests for events are picked from the scenario's own catalogue (which does not depend on the seed), by
shard where routing matters: a resource-sensitive test only shows if it runs on the pressured runner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from tests.sim.catalog import CATEGORIES, Catalog, build_catalog
from tests.sim.events import (
    BadImage,
    BrokenTest,
    FlakyCluster,
    FlakyTest,
    HardShard,
    Interaction,
    Outage,
    PeriodicPressure,
    PlatformTest,
    ResourceSensitiveTest,
    SickMachine,
    SickPool,
    SickRunner,
    SilentAgent,
    SlowDisk,
    WarningRunner,
)
from tests.sim.scenario import PoolSpec, Scenario


def _h(hours: float) -> timedelta:
    return timedelta(hours=hours)


class _Picker:
    """Picks event tests from a shard by kind, never the same test twice in one scenario."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.used: set[int] = set()

    def __call__(self, pool: str, shard: int, category: str = "plain") -> str:
        tests = [t for t in self.catalog.shards[pool][shard].tolist() if t not in self.used]
        code = CATEGORIES.index(category)
        wanted = [t for t in tests if int(self.catalog.category[t]) == code] or tests
        self.used.add(wanted[0])
        return str(self.catalog.ids[wanted[0]])


def seed_story() -> Scenario:
    """8 static-sharded linux runners; linux-03's disk fills and a dozen+ healthy tests of its shard fail
    for the last six hours; two genuinely flaky tests live on other shards."""
    base = Scenario(
        pools=(PoolSpec("linux", 8, sharding="static", images=("ubuntu-22.04-20260901",)),), duration_days=2.0
    )
    pick = _Picker(build_catalog(base))
    return replace(
        base,
        events=(
            SickRunner("linux-03", "disk", onset=_h(42)),
            FlakyTest(pick("linux", 5, "network"), p=0.15),
            FlakyTest(pick("linux", 6, "time"), p=0.08),
        ),
    )


def kitchen_sink() -> Scenario:
    """Every event kind in a 4-pool fleet (~40 runners incl. ephemeral slots) over three days.

    linux: 16 static-sharded runners; mac: 8 runners two per VM, label-routed; k8s: ephemeral, 12 slots on
    4 hosts; arm: 4 runners without health agents.
    """
    base = Scenario(
        pools=(
            PoolSpec("linux", 16, sharding="static", images=("ubuntu-22.04-20260901",)),
            PoolSpec(
                "mac",
                8,
                runners_per_machine=2,
                sharding="label",
                shards=8,
                images=("macos-14-20260815",),
                labels=("macos", "arm64"),
            ),
            PoolSpec(
                "k8s",
                12,
                ephemeral=True,
                hosts=4,
                shards=6,
                images=("runner-image-2026.09",),
                suites=("unit", "api", "build"),
                labels=("linux", "x64"),
            ),
            PoolSpec(
                "arm",
                4,
                shards=4,
                images=("ubuntu-arm-20260901",),
                suites=("unit", "build"),
                labels=("linux", "arm64"),
                agents=False,
            ),
        ),
        n_tests=400,
        duration_days=3.0,
        jobs_per_runner_per_hour=2.5,
    )
    pick = _Picker(build_catalog(base))
    linux_shard = {f"linux-{k + 1:02d}": k for k in range(16)}
    return replace(
        base,
        events=(
            SickRunner("linux-03", "disk", onset=_h(30)),
            SickRunner("linux-11", "clock", onset=_h(50), end=_h(62)),
            SickRunner("mac-05", "cache", onset=_h(40)),
            SlowDisk("linux-14", start=_h(0), days=2.6),
            SickMachine("k8s-host-02", "memory", onset=_h(36)),
            SickMachine("mac-vm-02", "disk", onset=_h(55)),
            BadImage("ubuntu-22.04-20260920", "linux", onset=_h(58), fraction_of_pool=0.25),
            SickPool("arm", "unknown", onset=_h(64)),
            SickRunner("linux-15", "memory", onset=_h(45)),
            SilentAgent("linux-15", start=_h(20)),  # sick with no readings: the truth says "unknown"
            SilentAgent("linux-16", start=_h(10), end=_h(16)),  # a gap in reports, nothing wrong
            Outage(start=_h(26), minutes=40),
            WarningRunner("linux-07", "disk"),
            WarningRunner("mac-02", "clock"),
            PeriodicPressure("linux-09", "memory"),
            ResourceSensitiveTest(pick("linux", linux_shard["linux-09"], "memory"), "memory"),
            ResourceSensitiveTest(pick("linux", linux_shard["linux-07"], "io"), "disk"),
            FlakyTest(pick("linux", 1, "network"), p=0.2),
            FlakyTest(pick("linux", 9, "time"), p=0.1),
            FlakyTest(pick("mac", 3, "plain"), p=0.05),
            FlakyTest(pick("k8s", 2, "plain"), p=0.12),
            FlakyTest(pick("mac", 1, "time"), p=0.15, pool="mac"),  # timing-sensitive on the slower hosts
            FlakyCluster(tuple(pick("linux", k, "network") for k in (0, 6, 10, 13)), p=0.06),
            BrokenTest(pick("linux", 5, "plain"), since=_h(40)),
            BrokenTest(pick("linux", 8, "plain"), since=_h(10), until=_h(14)),  # broken, then fixed
            PlatformTest(pick("mac", 6, "io"), "mac"),
            Interaction(pick("linux", linux_shard["linux-13"], "plain"), "linux-13", p=0.6),
            HardShard("linux", 4, p=0.02),
        ),
    )


def quiet_fleet() -> Scenario:
    """Nothing sick: flaky tests (one co-failing cluster across shards), background noise that differs a
    little between healthy runners, cache rollovers and lost reports."""
    base = Scenario(
        pools=(
            PoolSpec("linux", 8, sharding="static"),
            PoolSpec("k8s", 8, ephemeral=True, hosts=3, shards=6, suites=("unit", "api", "build")),
        ),
        duration_days=2.0,
    )
    pick = _Picker(build_catalog(base))
    return replace(
        base,
        events=(
            FlakyTest(pick("linux", 0, "network"), p=0.1),
            FlakyTest(pick("linux", 4, "time"), p=0.05),
            FlakyTest(pick("k8s", 1, "plain"), p=0.15),
            FlakyCluster(tuple(pick("linux", k, "network") for k in (1, 3, 5, 7)), p=0.05),
        ),
    )


def storm() -> Scenario:
    """Three workers, two of them sick at once (disk, memory), then a fleet-wide outage."""
    base = Scenario(
        pools=(PoolSpec("workers", 3, shards=3, provider="buildbot", caches=("ccache",)),),
        duration_days=2.0,
        jobs_per_runner_per_hour=3.0,
    )
    pick = _Picker(build_catalog(base))
    return replace(
        base,
        events=(
            SickRunner("workers-01", "disk", onset=_h(30)),
            SickRunner("workers-02", "memory", onset=_h(30.2)),
            Outage(start=_h(40), minutes=45),
            FlakyTest(pick("workers", 0, "plain"), p=0.1),
        ),
    )


def fresh_pair() -> Scenario:
    """Three workers, two sick from the first hour on: no healthy history, and each sick worker's only
    peers are one sick and one healthy worker."""
    base = Scenario(
        pools=(PoolSpec("workers", 3, shards=3, provider="buildbot", caches=("ccache",)),),
        duration_days=0.25,
        jobs_per_runner_per_hour=3.0,
    )
    return replace(
        base,
        events=(
            SickRunner("workers-01", "disk", onset=_h(0.1)),
            SickRunner("workers-02", "memory", onset=_h(0.1)),
        ),
    )


def red_herrings() -> Scenario:
    """Nothing sick, everything suspicious: bad readings without failures, a test failing on one runner,
    a hard static shard, a resource-sensitive test on a pressured runner, a co-failing flaky cluster."""
    base = Scenario(
        pools=(PoolSpec("linux", 8, sharding="static"), PoolSpec("mac", 4, shards=4)), duration_days=2.0
    )
    pick = _Picker(build_catalog(base))
    return replace(
        base,
        events=(
            WarningRunner("linux-02", "disk"),
            WarningRunner("linux-06", "clock"),
            WarningRunner("mac-03", "cache"),
            PeriodicPressure("linux-04", "memory", period_hours=6.0, duty=0.3),
            ResourceSensitiveTest(pick("linux", 3, "memory"), "memory"),
            Interaction(pick("linux", 6, "plain"), "linux-07", p=0.7),
            HardShard("linux", 0, p=0.03),
            FlakyCluster(tuple(pick("linux", k, "network") for k in (1, 2, 5)), p=0.06),
            FlakyTest(pick("mac", 0, "time"), p=0.1),
            SilentAgent("linux-08", start=_h(12), end=_h(20)),
        ),
    )


def slow_drift() -> Scenario:
    """A disk that fills over two days on a dynamically sharded pool: onset is a slope, not a step."""
    base = Scenario(pools=(PoolSpec("linux", 10, shards=10),), duration_days=3.0)
    pick = _Picker(build_catalog(base))
    return replace(
        base,
        events=(
            SlowDisk("linux-06", start=_h(6), days=2.0),
            FlakyTest(pick("linux", 2, "network"), p=0.08),
        ),
    )


def bad_rollout() -> Scenario:
    """A new image reaches half of a pool and breaks many tests on every host that runs it; readings stay
    healthy. The hosts are not sick, the image is."""
    base = Scenario(
        pools=(PoolSpec("linux", 12, shards=12, images=("ubuntu-22.04-20260901",)),), duration_days=2.0
    )
    pick = _Picker(build_catalog(base))
    return replace(
        base,
        events=(
            BadImage("ubuntu-22.04-20260915", "linux", onset=_h(30), fraction_of_pool=0.5),
            FlakyTest(pick("linux", 4, "plain"), p=0.1),
        ),
    )


def ephemeral_host() -> Scenario:
    """An autoscaled pool: fresh runner ids per job on four hosts, one host under memory pressure."""
    base = Scenario(pools=(PoolSpec("k8s", 12, ephemeral=True, hosts=4, shards=6),), duration_days=2.0)
    pick = _Picker(build_catalog(base))
    return replace(
        base,
        events=(
            SickMachine("k8s-host-03", "memory", onset=_h(28)),
            FlakyTest(pick("k8s", 1, "plain"), p=0.1),
        ),
    )


def default() -> Scenario:
    """The Scenario defaults: one static-sharded pool of 8 runners, 300 tests, two quiet days."""
    return Scenario()


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "default": default,
    "seed_story": seed_story,
    "kitchen_sink": kitchen_sink,
    "quiet_fleet": quiet_fleet,
    "storm": storm,
    "fresh_pair": fresh_pair,
    "red_herrings": red_herrings,
    "slow_drift": slow_drift,
    "bad_rollout": bad_rollout,
    "ephemeral_host": ephemeral_host,
}
