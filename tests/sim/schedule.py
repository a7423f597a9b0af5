"""When jobs run and where: pipeline runs per pool at the commit of the moment, one job per shard.

A persistent pool's shard job goes to runner k (static sharding), to any runner (dynamic) or to a runner of
the shard's label group (label routing); an ephemeral pool's job gets a fresh runner on a random host.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from tests.sim.catalog import Catalog
from tests.sim.scenario import Scenario
from tests.sim.topology import Topology

JOB_SETUP_S = 37.5  # checkout and dependency install before the first test (mean)


@dataclass
class Jobs:
    pool: np.ndarray
    shard: np.ndarray
    agent: np.ndarray
    machine: np.ndarray
    runner: np.ndarray  # persistent runner index, -1 for ephemeral
    eph_name: list[str]  # the single-use runner id of an ephemeral job, "" otherwise
    start: np.ndarray  # seconds after scenario start
    run: np.ndarray
    commit: np.ndarray
    attempt: np.ndarray

    def __len__(self) -> int:
        return len(self.start)

    def take(self, idx: np.ndarray) -> Jobs:
        return Jobs(
            self.pool[idx],
            self.shard[idx],
            self.agent[idx],
            self.machine[idx],
            self.runner[idx],
            [self.eph_name[i] for i in idx.tolist()],
            self.start[idx],
            self.run[idx],
            self.commit[idx],
            self.attempt[idx],
        )

    @staticmethod
    def concat(parts: list[Jobs]) -> Jobs:
        def cat(name: str) -> np.ndarray:
            out: np.ndarray = np.concatenate([getattr(p, name) for p in parts])
            return out

        return Jobs(
            cat("pool"),
            cat("shard"),
            cat("agent"),
            cat("machine"),
            cat("runner"),
            [n for p in parts for n in p.eph_name],
            cat("start"),
            cat("run"),
            cat("commit"),
            cat("attempt"),
        )


@dataclass
class Commits:
    times: np.ndarray
    shas: list[str]

    def at(self, t: np.ndarray) -> np.ndarray:
        idx: np.ndarray = np.searchsorted(self.times, t, side="right") - 1
        return idx


def build_commits(scenario: Scenario, forced: list[float], rng: np.random.Generator) -> Commits:
    span = scenario.duration_s
    n = rng.poisson(scenario.commits_per_hour * span / 3600.0)
    pushes = rng.uniform(0, span, size=n)
    times = np.sort(np.concatenate([[-3600.0], pushes, np.asarray(forced, dtype=float)]))
    shas = [bytes(row).hex() for row in rng.integers(0, 256, size=(len(times), 20), dtype=np.uint8)]
    return Commits(times=times, shas=shas)


def _run_times(scenario: Scenario, rate_per_hour: float, rng: np.random.Generator) -> np.ndarray:
    # Office hours bring more pushes: thin a homogeneous process by a daily sine whose mean is 1.
    span, amp = scenario.duration_s, min(max(scenario.diurnal, 0.0), 0.95)
    peak = rate_per_hour * (1 + amp) / 3600.0
    cand = np.sort(rng.uniform(0, span, size=rng.poisson(peak * span)))
    hour = (cand / 3600.0 + scenario.start.hour + scenario.start.minute / 60.0) % 24
    keep = rng.random(len(cand)) < (1 + amp * np.sin(2 * np.pi * (hour - 8) / 24)) / (1 + amp)
    return cand[keep]


class EphemeralNames:
    """Single-use runner ids, as GitHub's ARC or GitLab's autoscaler hand them out."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._seen: set[str] = set()

    def make(self, pool: str, count: int) -> list[str]:
        out: list[str] = []
        while len(out) < count:
            name = f"{pool}-{int(self._rng.integers(0, 2**48)):012x}"
            if name not in self._seen:
                self._seen.add(name)
                out.append(name)
        return out


def assign(
    topo: Topology, pool: int, shards: np.ndarray, rng: np.random.Generator, names: EphemeralNames
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Runner, agent and machine for each shard job of `pool`."""
    spec = topo.pools[pool]
    n = len(shards)
    if spec.ephemeral:
        hosts = np.flatnonzero(topo.machine_pool == pool)
        machine = hosts[rng.integers(0, len(hosts), size=n)]
        agent = np.array(
            [int(np.flatnonzero(topo.agent_machine == m)[0]) for m in machine.tolist()], dtype=np.int64
        )
        return np.full(n, -1, dtype=np.int64), agent, machine, names.make(spec.name, n)
    eligible = eligible_runners(topo, pool)
    runner = np.array(
        [eligible[k][int(rng.integers(0, len(eligible[k])))] for k in shards.tolist()], dtype=np.int64
    )
    return runner, topo.runner_agent[runner], topo.runner_machine[runner], [""] * n


def eligible_runners(topo: Topology, pool: int) -> list[np.ndarray]:
    """For each shard of a persistent pool, the runners its routing allows."""
    spec = topo.pools[pool]
    runners = topo.pool_runners(pool)
    count = spec.shard_count()
    if spec.sharding == "static":
        return [runners[k % len(runners) : k % len(runners) + 1] for k in range(count)]
    if spec.sharding == "label":
        groups = max(1, min(spec.label_groups, spec.runners))
        return [runners[topo.runner_group[runners] == k % groups] for k in range(count)]
    return [runners] * count


def _queue(
    topo: Topology,
    pool: int,
    submit: np.ndarray,
    shards: np.ndarray,
    busy_s: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """One job at a time per runner: a job goes to an idle eligible runner, or waits for the first free."""
    eligible = eligible_runners(topo, pool)
    free_at = np.zeros(len(topo.runner_names))
    runner = np.empty(len(submit), dtype=np.int64)
    start = np.empty(len(submit))
    pickup = rng.exponential(8.0, size=len(submit))
    picks = rng.random(len(submit))
    for j in np.argsort(submit, kind="stable").tolist():
        cands = eligible[int(shards[j])]
        idle = cands[free_at[cands] <= submit[j]]
        if len(idle):
            r = int(idle[int(picks[j] * len(idle))])
            begin = float(submit[j])
        else:
            r = int(cands[int(np.argmin(free_at[cands]))])
            begin = float(free_at[r])
        runner[j] = r
        start[j] = begin + pickup[j]
        free_at[r] = start[j] + busy_s[int(shards[j])]
    return runner, start


def build_jobs(
    scenario: Scenario,
    catalog: Catalog,
    topo: Topology,
    commits: Commits,
    rng: np.random.Generator,
    names: EphemeralNames,
) -> Jobs:
    parts: list[Jobs] = []
    run_offset = 0
    for p, spec in enumerate(topo.pools):
        count = spec.shard_count()
        runs = _run_times(scenario, scenario.jobs_per_runner_per_hour * spec.runners / count, rng)
        shards = np.tile(np.arange(count), len(runs))
        run = np.repeat(np.arange(len(runs)), count)
        submit = runs[run] + rng.exponential(5.0, size=len(run))
        if spec.ephemeral:
            # Autoscaled: a fresh runner per job, after a VM or pod start.
            start = submit + rng.exponential(45.0, size=len(run))
            runner, agent, machine, eph = assign(topo, p, shards, rng, names)
        else:
            busy = np.array(
                [JOB_SETUP_S + catalog.duration_median[t].sum() * 1.05 for t in catalog.shards[spec.name]]
            )
            runner, start = _queue(topo, p, submit, shards, busy, rng)
            agent, machine, eph = topo.runner_agent[runner], topo.runner_machine[runner], [""] * len(run)
        parts.append(
            Jobs(
                np.full(len(run), p, dtype=np.int64),
                shards,
                agent,
                machine,
                runner,
                eph,
                start,
                run + run_offset,
                commits.at(runs)[run],
                np.ones(len(run), dtype=np.int64),
            )
        )
        run_offset += len(runs)
    jobs = Jobs.concat(parts)
    keep = np.flatnonzero(jobs.start < scenario.duration_s)
    return jobs.take(keep)


def _earliest(busy: list[tuple[float, float]], t: float, length: float) -> float:
    """The first moment from `t` when a runner with these (sorted) busy intervals is free for `length`."""
    i = bisect.bisect_right(busy, (t, float("inf"))) - 1
    i = max(i, 0)
    while i < len(busy):
        start, end = busy[i]
        if end <= t:
            i += 1
            continue
        if start >= t + length:
            return t
        t = max(t, end)
        i += 1
    return t


def place_retries(
    topo: Topology,
    catalog: Catalog,
    first: Jobs,
    first_end: np.ndarray,
    again: Jobs,
    rng: np.random.Generator,
    names: EphemeralNames,
) -> None:
    """Put each re-run on a runner its routing allows, around the jobs already there (in place)."""
    busy: dict[int, list[tuple[float, float]]] = {}
    for r, s, e in zip(first.runner.tolist(), first.start.tolist(), first_end.tolist(), strict=True):
        if r >= 0:
            busy.setdefault(r, []).append((s, max(e, s)))
    for intervals in busy.values():
        intervals.sort()
    eligible = {p: eligible_runners(topo, p) for p in range(len(topo.pools)) if not topo.pools[p].ephemeral}
    for j in np.argsort(again.start, kind="stable").tolist():
        p = int(again.pool[j])
        spec = topo.pools[p]
        if spec.ephemeral:
            hosts = np.flatnonzero(topo.machine_pool == p)
            m = int(hosts[rng.integers(0, len(hosts))])
            again.runner[j], again.machine[j] = -1, m
            again.agent[j] = int(np.flatnonzero(topo.agent_machine == m)[0])
            again.eph_name[j] = names.make(spec.name, 1)[0]
            continue
        k = int(again.shard[j])
        length = JOB_SETUP_S + float(catalog.duration_median[catalog.shards[spec.name][k]].sum()) * 1.05
        submit = float(again.start[j])
        best_r, best_t = -1, float("inf")
        for r in rng.permutation(eligible[p][k]).tolist():
            t = _earliest(busy.get(r, []), submit, length)
            if t < best_t:
                best_r, best_t = r, t
            if t == submit:
                break
        again.runner[j], again.start[j] = best_r, best_t
        again.agent[j], again.machine[j] = topo.runner_agent[best_r], topo.runner_machine[best_r]
        bisect.insort(busy.setdefault(best_r, []), (best_t, best_t + length))
