"""Scenarios drawn at random: fleets and events the hand-written scenarios never combined.

The hand-written scenarios are what the analysis was developed against; these are what it was not.
`python -m eval run --sim sim:random-36,sim:random-37 --seeds 1 --out /tmp/eval` grades the analysis on
two of them: a rule that only works for the shapes of scenarios.py shows up here as missed or false
verdicts.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import numpy as np

from tests.sim.catalog import build_catalog
from tests.sim.events import (
    BadImage,
    BrokenTest,
    Event,
    FlakyTest,
    Interaction,
    Outage,
    SickMachine,
    SickRunner,
    WarningRunner,
)
from tests.sim.scenario import PoolSpec, Scenario, Sharding
from tests.sim.scenarios import _Picker

DIMENSIONS = ("disk", "memory", "clock", "cache")


def random_scenario(number: int) -> Scenario:
    rng = np.random.default_rng(10_000 + number)
    days = float(rng.choice([0.5, 1.0, 2.0, 3.0]))
    hours = days * 24
    pools = []
    for index in range(int(rng.integers(1, 4))):
        name = ("alpha", "beta", "gamma")[index]
        if rng.random() < 0.25:
            pools.append(
                PoolSpec(name, int(rng.integers(6, 13)), ephemeral=True, hosts=int(rng.integers(3, 6)))
            )
            continue
        sharding: Sharding = rng.choice(["static", "dynamic", "label"])
        runners = int(rng.integers(3, 13))
        pools.append(
            PoolSpec(name, runners, sharding=sharding, shards=runners if sharding != "static" else None)
        )
    base = Scenario(
        pools=tuple(pools),
        n_tests=int(rng.integers(150, 400)),
        duration_days=days,
        jobs_per_runner_per_hour=float(rng.uniform(1.5, 4.0)),
    )
    pick = _Picker(build_catalog(base))
    events: list[Event] = []
    taken: set[str] = set()

    def onset() -> timedelta:
        return timedelta(hours=float(rng.uniform(0.3, 0.85)) * hours)

    for pool in pools:
        if pool.ephemeral:
            if rng.random() < 0.5:
                host = f"{pool.name}-host-{int(rng.integers(1, pool.hosts + 1)):02d}"
                events.append(SickMachine(host, rng.choice(DIMENSIONS), onset=onset()))
            continue
        sick = int(rng.choice([0, 1, 1, 2])) if pool.runners >= 4 else int(rng.choice([0, 1]))
        for runner in rng.choice(pool.runners, size=sick, replace=False):
            name = f"{pool.name}-{int(runner) + 1:02d}"
            taken.add(name)
            events.append(
                SickRunner(
                    name, rng.choice(DIMENSIONS), onset=onset(), fail_prob=float(rng.uniform(0.3, 0.8))
                )
            )
        healthy = [
            f"{pool.name}-{i + 1:02d}" for i in range(pool.runners) if f"{pool.name}-{i + 1:02d}" not in taken
        ]
        if healthy and rng.random() < 0.5:
            events.append(WarningRunner(str(rng.choice(healthy)), rng.choice(DIMENSIONS)))
        if len(healthy) >= 2 and rng.random() < 0.3:
            events.append(Interaction(pick(pool.name, 0), str(rng.choice(healthy)), p=0.6))
        if pool.runners >= 6 and not pool.ephemeral and rng.random() < 0.2:
            events.append(BadImage(f"{pool.name}-2026.10.1", pool.name, onset=onset(), fraction_of_pool=0.5))
    for _ in range(int(rng.integers(1, 5))):
        pool = pools[int(rng.integers(0, len(pools)))]
        shard = int(rng.integers(0, pool.shard_count()))
        events.append(FlakyTest(pick(pool.name, shard, "plain"), p=float(rng.uniform(0.05, 0.3))))
    if rng.random() < 0.3:
        pool = pools[0]
        events.append(BrokenTest(pick(pool.name, 0), since=onset()))
    if rng.random() < 0.4:
        events.append(Outage(start=onset(), minutes=float(rng.uniform(20, 60))))
    return replace(base, events=tuple(events))


def widened(scenario: Scenario, factor: int) -> Scenario:
    """The same fleet with `factor` times the runners (and hosts) in every pool, each shard split as
    many ways: hundreds of runners with small jobs, where per-runner evidence comes slowly. Events
    keep their targets, which are the first runners of each pool."""
    pools = tuple(
        replace(
            pool,
            runners=pool.runners * factor,
            hosts=pool.hosts * factor if pool.ephemeral else pool.hosts,
            shards=pool.shards * factor if pool.shards else None,
        )
        for pool in scenario.pools
    )
    return replace(scenario, pools=pools)
