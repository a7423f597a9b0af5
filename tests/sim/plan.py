"""Events resolved against the catalogue and the topology: indices, windows and per-test probabilities.

Also the ground truth, which is written here from the same resolved values the generator uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from tests.sim.catalog import DIMENSION_CATEGORIES, Catalog
from tests.sim.events import (
    DIMENSIONS,
    BadImage,
    BrokenTest,
    Dimension,
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
from tests.sim.health import Rollout
from tests.sim.scenario import Scenario
from tests.sim.topology import Topology
from tests.sim.truth import TruthDraft

MIN_BREADTH = 12  # a sick entity breaks at least this many distinct tests it runs
SPILL = 0.08  # share of unrelated tests a resource failure also breaks (fixtures write, import, allocate)


@dataclass
class Sick:
    """One failing entity: `where` is agent, machine, image or pool index according to `level`."""

    label: str
    level: str  # agent | machine | image | pool
    where: int
    dimension: Dimension
    onset_s: float
    end_s: float
    p_test: np.ndarray  # (n_tests,)
    slow_threshold: float = 0.0  # SlowDisk: probability scales with how far free space is below this
    job_share: float = 1.0  # the share of jobs it strikes at all


@dataclass
class Plan:
    base_p: np.ndarray
    skip: np.ndarray  # (pools, tests)
    sick: list[Sick] = field(default_factory=list)
    rollouts: list[Rollout] = field(default_factory=list)
    agent_noise: np.ndarray = field(default_factory=lambda: np.ones(0))  # per-agent base-rate multiplier
    flaky: list[tuple[int, float, int]] = field(default_factory=list)  # test, p, pool (-1: all)
    clusters: list[tuple[np.ndarray, float]] = field(default_factory=list)
    broken: list[tuple[int, float, float]] = field(default_factory=list)  # test, since, until (commit times)
    platform: list[tuple[int, int, float]] = field(default_factory=list)
    resource: list[tuple[int, Dimension, float]] = field(default_factory=list)
    interaction: list[tuple[int, int, float]] = field(default_factory=list)  # test, agent, p
    outages: list[tuple[Outage, float, float, np.ndarray]] = field(default_factory=list)  # ev, t0, t1, agents
    slow_disks: list[tuple[str, int, float, float]] = field(default_factory=list)  # runner, agent, start, thr


def _affected(
    catalog: Catalog, reachable: np.ndarray, dimension: Dimension, fail_prob: float, rng: np.random.Generator
) -> np.ndarray:
    n = len(catalog)
    cats = DIMENSION_CATEGORIES[dimension]
    hit = np.isin(catalog.category, cats) if cats else rng.random(n) < 0.35
    hit |= rng.random(n) < SPILL
    mask = np.zeros(n, dtype=bool)
    mask[reachable] = hit[reachable]
    short = MIN_BREADTH - int(mask.sum())
    if short > 0:
        rest = reachable[~mask[reachable]]
        mask[rng.permutation(rest)[:short]] = True
    # Tests differ in how hard a resource failure hits them; keep some below certainty.
    p = np.where(mask, np.clip(fail_prob * rng.uniform(0.6, 1.4, size=n), 0.0, 0.98), 0.0)
    out: np.ndarray = p
    return out


_RUNNER_EVENTS = (SickRunner, SlowDisk, WarningRunner, PeriodicPressure, SilentAgent, Interaction)


def _named_machines(scenario: Scenario, topo: Topology) -> np.ndarray:
    out: list[int] = []
    for ev in scenario.events:
        if isinstance(ev, SickMachine):
            out.append(topo.machine_index(ev.machine))
        elif isinstance(ev, _RUNNER_EVENTS):
            out.append(int(topo.agent_machine[topo.agent_index(ev.runner)]))
        elif isinstance(ev, HardShard):
            pool = topo.pool_index(ev.pool)
            runners = topo.pool_runners(pool)
            if topo.pools[pool].sharding == "static" and 0 <= ev.shard < len(runners):
                out.append(int(topo.runner_machine[runners[ev.shard]]))
    return np.asarray(out, dtype=np.int64)


_PROBABILITIES = (
    "p",
    "fail_prob",
    "other_fail_prob",
    "fraction_of_pool",
    "fraction_of_runners",
    "duty",
    "threshold",
)
_POSITIVE = ("days", "minutes", "period_hours")


def check_event(ev: object) -> None:
    """Refuse knobs that cannot mean anything, naming the event and the field."""
    for name in _PROBABILITIES:
        value = getattr(ev, name, None)
        if value is not None and not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"{ev!r}: {name} must be within [0, 1]")
    for name in _POSITIVE:
        value = getattr(ev, name, None)
        if value is not None and not float(value) > 0.0:
            raise ValueError(f"{ev!r}: {name} must be positive")
    dimension = getattr(ev, "dimension", None)
    if dimension is not None and dimension not in DIMENSIONS:
        raise ValueError(f"{ev!r}: dimension must be one of {', '.join(DIMENSIONS)}")


def _at(scenario: Scenario, seconds: float) -> datetime:
    return scenario.start + timedelta(seconds=seconds)


def build_plan(
    scenario: Scenario, catalog: Catalog, topo: Topology, rng: np.random.Generator
) -> tuple[Plan, TruthDraft]:
    n = len(catalog)
    noisy = rng.random(n) < scenario.noisy_test_fraction
    lo = np.log(1e-4)
    hi = np.log(max(scenario.base_fail_max, 1.1e-4))
    base_p = np.where(noisy, np.exp(rng.uniform(lo, hi, size=n)), 0.0)
    event_tests = {catalog.index(ev.test) for ev in scenario.events if hasattr(ev, "test")}
    for ev in scenario.events:
        if isinstance(ev, FlakyCluster):
            event_tests.update(catalog.index(t) for t in ev.tests)
    skip = rng.random((len(topo.pools), n)) < scenario.skip_fraction
    skip[:, sorted(event_tests)] = False
    # Healthy machines are not identical: some are slower and time out a little more often.
    noise = rng.lognormal(0.0, scenario.runner_noise, size=len(topo.agent_names))
    plan = Plan(base_p=base_p, skip=skip, agent_noise=noise / noise.mean())
    forever = scenario.duration_s + 86400.0
    truth = TruthDraft()

    def mark(kind: str, name: str, dimension: str, onset_s: float) -> None:
        if onset_s < scenario.duration_s:
            truth.sick[(kind, name)] = (dimension, _at(scenario, onset_s))

    for ev in scenario.events:
        check_event(ev)
        if isinstance(ev, SickRunner):
            a = topo.agent_index(ev.runner)
            if topo.agent_runner[a] < 0:
                raise ValueError(f"{ev.runner!r} is an ephemeral host: use SickMachine")
            onset = scenario.offset_s(ev.onset)
            end = scenario.offset_s(ev.end) if ev.end is not None else forever
            reach = topo.reachable_tests(catalog, np.array([a]))
            p = _affected(catalog, reach, ev.dimension, ev.fail_prob, rng)
            plan.sick.append(Sick(f"sick:runner:{ev.runner}", "agent", a, ev.dimension, onset, end, p))
            mark("runner", ev.runner, ev.dimension, onset)
        elif isinstance(ev, SlowDisk):
            a = topo.agent_index(ev.runner)
            start = scenario.offset_s(ev.start)
            p = _affected(catalog, topo.reachable_tests(catalog, np.array([a])), "disk", ev.fail_prob, rng)
            plan.sick.append(
                Sick(
                    f"sick:runner:{ev.runner}",
                    "agent",
                    a,
                    "disk",
                    start,
                    forever,
                    p,
                    slow_threshold=ev.threshold,
                )
            )
            plan.slow_disks.append((ev.runner, a, start, ev.threshold))
        elif isinstance(ev, SickMachine):
            m = topo.machine_index(ev.machine)
            onset = scenario.offset_s(ev.onset)
            end = scenario.offset_s(ev.end) if ev.end is not None else forever
            p = _affected(
                catalog,
                topo.reachable_tests(catalog, topo.machine_agents(m)),
                ev.dimension,
                ev.fail_prob,
                rng,
            )
            plan.sick.append(Sick(f"sick:machine:{ev.machine}", "machine", m, ev.dimension, onset, end, p))
            mark("machine", ev.machine, ev.dimension, onset)
        elif isinstance(ev, SickPool):
            pool = topo.pool_index(ev.pool)
            onset = scenario.offset_s(ev.onset)
            end = scenario.offset_s(ev.end) if ev.end is not None else forever
            p = _affected(catalog, catalog.pool_tests(ev.pool), ev.dimension, ev.fail_prob, rng)
            plan.sick.append(Sick(f"sick:pool:{ev.pool}", "pool", pool, ev.dimension, onset, end, p))
            mark("pool", ev.pool, ev.dimension, onset)
        elif isinstance(ev, BadImage):
            pool = topo.pool_index(ev.pool)
            image = topo.image_index(ev.image)
            hosts = np.flatnonzero(topo.machine_pool == pool)
            count = min(len(hosts), max(1, round(ev.fraction_of_pool * len(hosts))))
            # Roll out to hosts no other event names first, so the causes stay separable by default.
            named = _named_machines(scenario, topo)
            order = rng.permutation(hosts)
            order = np.concatenate([order[~np.isin(order, named)], order[np.isin(order, named)]])
            first = [int(topo.agent_machine[topo.agent_index(runner)]) for runner in ev.first_on]
            order = np.concatenate([first, order[~np.isin(order, first)]]).astype(np.int64)
            machines = np.sort(order[:count])
            onset = scenario.offset_s(ev.onset)
            end = scenario.offset_s(ev.rolled_back) if ev.rolled_back is not None else forever
            plan.rollouts.append(Rollout(image, pool, machines, onset, ev.dimension, end))
            if ev.breaks is None:
                p = _affected(catalog, catalog.pool_tests(ev.pool), ev.dimension, ev.fail_prob, rng)
            else:
                p = np.zeros(len(catalog))
                p[rng.choice(catalog.pool_tests(ev.pool), ev.breaks, replace=False)] = ev.fail_prob
            plan.sick.append(
                Sick(
                    f"sick:image:{ev.image}",
                    "image",
                    image,
                    ev.dimension,
                    onset,
                    end,
                    p,
                    job_share=ev.job_share,
                )
            )
            mark("image", ev.image, ev.dimension, onset)
        elif isinstance(ev, Outage):
            t0 = scenario.offset_s(ev.start)
            t1 = t0 + ev.minutes * 60.0
            agents = np.flatnonzero(rng.random(len(topo.agent_names)) < ev.fraction_of_runners)
            plan.outages.append((ev, t0, t1, agents))
            truth.outages.append((_at(scenario, t0), _at(scenario, t1)))
        elif isinstance(ev, WarningRunner | PeriodicPressure):
            topo.agent_index(ev.runner)
            truth.warning_runners.add(ev.runner)
        elif isinstance(ev, SilentAgent):
            topo.agent_index(ev.runner)
            truth.silent_agents.add(ev.runner)
        elif isinstance(ev, FlakyTest):
            on_pool = topo.pool_index(ev.pool) if ev.pool is not None else -1
            plan.flaky.append((catalog.index(ev.test), ev.p, on_pool))
            truth.flaky_tests.add(catalog.ids[catalog.index(ev.test)])
        elif isinstance(ev, FlakyCluster):
            members = np.array(sorted({catalog.index(t) for t in ev.tests}), dtype=np.int64)
            plan.clusters.append((members, ev.p))
            truth.flaky_tests.update(catalog.ids[i] for i in members.tolist())
        elif isinstance(ev, BrokenTest):
            until = scenario.offset_s(ev.until) if ev.until is not None else forever
            plan.broken.append((catalog.index(ev.test), scenario.offset_s(ev.since), until))
            truth.broken_tests.add(catalog.ids[catalog.index(ev.test)])
        elif isinstance(ev, PlatformTest):
            plan.platform.append((catalog.index(ev.test), topo.pool_index(ev.pool), ev.p))
            truth.platform_tests.add(catalog.ids[catalog.index(ev.test)])
        elif isinstance(ev, ResourceSensitiveTest):
            plan.resource.append((catalog.index(ev.test), ev.dimension, ev.p))
            truth.resource_sensitive_tests.add(catalog.ids[catalog.index(ev.test)])
        elif isinstance(ev, Interaction):
            plan.interaction.append((catalog.index(ev.test), topo.agent_index(ev.runner), ev.p))
            truth.interaction.add((catalog.ids[catalog.index(ev.test)], ev.runner))
        elif isinstance(ev, HardShard):
            shards = catalog.shards[topo.pools[topo.pool_index(ev.pool)].name]
            if not 0 <= ev.shard < len(shards):
                raise ValueError(f"pool {ev.pool!r} has shards 0..{len(shards) - 1}, not {ev.shard}")
            plan.base_p[shards[ev.shard]] += ev.p
            truth.hard_shards.add((ev.pool, str(ev.shard)))
        else:
            raise TypeError(f"unknown event {ev!r}")
    return plan, truth
