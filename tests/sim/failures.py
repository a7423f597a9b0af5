"""Running jobs: every test of each job's shard gets a time, a duration and an outcome with its cause.

Causes are drawn independently, in a fixed priority order; the first one that fires names the failure
(its message, and the per-result cause the simulator hands back as ground truth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tests.sim.catalog import NETWORK, Catalog
from tests.sim.health import Health
from tests.sim.plan import Plan
from tests.sim.scenario import Scenario
from tests.sim.schedule import JOB_SETUP_S, Commits, Jobs
from tests.sim.topology import Topology

PASSED, FAILED, ERROR, SKIPPED = 0, 1, 2, 3
OUTCOMES = ("passed", "failed", "error", "skipped")
# Share of failures reported as errors (setup or teardown broke, not an assertion), by message family.
ERROR_SHARE = {"disk": 0.35, "memory": 0.25, "outage": 0.3, "abort": 1.0, "cache": 0.2, "unknown": 0.2}


@dataclass
class Results:
    test: np.ndarray
    job: np.ndarray
    t: np.ndarray  # completion, seconds after start
    duration: np.ndarray
    outcome: np.ndarray
    cause: np.ndarray  # index into Causes.labels, 0 = none

    @staticmethod
    def concat(parts: list[Results]) -> Results:
        return Results(
            *(
                np.concatenate([getattr(p, f) for p in parts])
                for f in ("test", "job", "t", "duration", "outcome", "cause")
            )
        )


class Causes:
    """Cause labels (ground truth) and the message family each one uses."""

    def __init__(self) -> None:
        self.labels: list[str] = [""]
        self.families: list[str] = [""]
        self._ids: dict[str, int] = {}

    def id(self, label: str, family: str) -> int:
        if label not in self._ids:
            self._ids[label] = len(self.labels)
            self.labels.append(label)
            self.families.append(family)
        return self._ids[label]


def job_images(jobs: Jobs, topo: Topology, plan: Plan) -> np.ndarray:
    image: np.ndarray = topo.machine_image[jobs.machine].copy()
    for ro in plan.rollouts:
        on = np.isin(jobs.machine, ro.machines) & (jobs.start >= ro.onset_s) & (jobs.start < ro.end_s)
        image[on] = ro.image
    return image


class _Draw:
    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.fired = np.zeros(n, dtype=bool)
        self.cause = np.zeros(n, dtype=np.int64)
        self.rng = rng

    def apply(self, idx: np.ndarray, p: np.ndarray | float, cause: int) -> None:
        if len(idx) == 0:
            return
        hit = idx[self.rng.random(len(idx)) < p]
        new = hit[~self.fired[hit]]
        self.cause[new] = cause
        self.fired[hit] = True


def execute(
    scenario: Scenario,
    catalog: Catalog,
    topo: Topology,
    health: Health,
    plan: Plan,
    commits: Commits,
    causes: Causes,
    jobs: Jobs,
    job_offset: int,
    rng: np.random.Generator,
) -> Results:
    shard_lists = [[catalog.shards[p.name][k] for k in range(p.shard_count())] for p in topo.pools]
    per_job = [shard_lists[p][k] for p, k in zip(jobs.pool.tolist(), jobs.shard.tolist(), strict=True)]
    lens = np.array([len(x) for x in per_job], dtype=np.int64)
    test = np.concatenate(per_job) if per_job else np.empty(0, dtype=np.int64)
    job = np.repeat(np.arange(len(jobs)), lens)
    pool = jobs.pool[job]
    skipped = plan.skip[pool, test]
    duration = catalog.duration_median[test] * rng.lognormal(0.0, 0.25, size=len(test))
    duration[skipped] = 0.0
    cs = np.cumsum(duration)
    first = np.concatenate([[0], np.cumsum(lens)[:-1]])
    before = np.repeat(cs[first] - duration[first], lens) if len(lens) else cs
    setup = rng.uniform(15.0, 2 * JOB_SETUP_S - 15.0, size=len(jobs))  # checkout, dependency install
    t = jobs.start[job] + setup[job] + (cs - before)

    # A lost runner cuts its job short: the running test errors, the rest never report.
    keep = np.ones(len(test), dtype=bool)
    aborted = np.zeros(len(test), dtype=bool)
    for j in np.flatnonzero(rng.random(len(jobs)) < scenario.job_abort_prob).tolist():
        cut = int(first[j] + rng.integers(0, lens[j]))
        keep[cut + 1 : first[j] + lens[j]] = False
        aborted[cut] = True

    agent, machine = jobs.agent[job], jobs.machine[job]
    image = job_images(jobs, topo, plan)[job]
    gi = health.grid_index(agent, t)
    draw = _Draw(len(test), rng)
    commit_time = commits.times[jobs.commit[job]]
    for tid, since, until in plan.broken:
        idx = np.flatnonzero((test == tid) & (commit_time >= since) & (commit_time < until))
        draw.apply(idx, 1.0, causes.id("broken", "broken"))
    for tid, on_pool, p_platform in plan.platform:
        draw.apply(
            np.flatnonzero((test == tid) & (pool == on_pool)), p_platform, causes.id("platform", "platform")
        )
    for ev, t0, t1, agents in plan.outages:
        inside = (t >= t0) & (t < t1) & np.isin(agent, agents)
        net = catalog.category[test] == NETWORK
        draw.apply(np.flatnonzero(inside & net), ev.fail_prob, causes.id("outage", "outage"))
        draw.apply(np.flatnonzero(inside & ~net), ev.other_fail_prob, causes.id("outage", "outage"))
    for s in plan.sick:
        entity = {"agent": agent, "machine": machine, "image": image, "pool": pool}[s.level]
        idx = np.flatnonzero((entity == s.where) & (t >= s.onset_s) & (t < s.end_s) & (s.p_test[test] > 0))
        if s.job_share < 1.0:
            struck = rng.random(len(jobs)) < s.job_share
            idx = idx[struck[job[idx]]]
        p_sick = s.p_test[test[idx]]
        if s.slow_threshold > 0:
            ratio = health.disk_ratio[agent[idx], gi[idx]]
            p_sick = p_sick * np.clip((s.slow_threshold - ratio) / s.slow_threshold, 0.0, 1.0)
        draw.apply(idx, p_sick, causes.id(s.label, s.dimension))
    for tid, a, p_int in plan.interaction:
        draw.apply(
            np.flatnonzero((test == tid) & (agent == a)),
            p_int,
            causes.id(f"interaction:{topo.agent_names[a]}", "interaction"),
        )
    for tid, dim, p_res in plan.resource:
        idx = np.flatnonzero(test == tid)
        idx = idx[health.pressure(dim)[agent[idx], gi[idx]]]
        draw.apply(idx, p_res, causes.id(f"resource:{dim}", dim))
    for tid, p_flaky, on_pool in plan.flaky:
        where = (test == tid) if on_pool < 0 else (test == tid) & (pool == on_pool)
        draw.apply(np.flatnonzero(where), p_flaky, causes.id("flaky", "flaky"))
    if plan.clusters:
        runs = jobs.run[job]
        n_runs = int(jobs.run.max()) + 1
        for members, p_cluster in plan.clusters:
            fired_runs = rng.random(n_runs) < p_cluster  # this pass is one attempt of every run in it
            idx = np.flatnonzero(np.isin(test, members) & fired_runs[runs])
            draw.apply(idx, 0.9, causes.id("flaky", "flaky"))
    noisy = np.flatnonzero(plan.base_p[test] > 0)
    draw.apply(
        noisy,
        np.clip(plan.base_p[test[noisy]] * plan.agent_noise[agent[noisy]], 0, 1),
        causes.id("base", "base"),
    )
    draw.fired &= ~skipped
    draw.cause[skipped] = 0
    abort_cause = causes.id("abort", "abort")
    draw.fired |= aborted
    draw.cause[aborted] = abort_cause

    outcome = np.where(skipped, SKIPPED, PASSED)
    families = np.array(causes.families)[draw.cause]
    err_share = np.zeros(len(test))
    for fam, share in ERROR_SHARE.items():
        err_share[families == fam] = share
    err_share[err_share == 0] = 0.05
    as_error = rng.random(len(test)) < err_share
    outcome = np.where(draw.fired, np.where(as_error, ERROR, FAILED), outcome)
    # A failing test usually stops early. (No hangs past its slot: later tests' times are already fixed.)
    fail_scale = rng.uniform(0.05, 1.0, size=len(test))
    duration = np.where(draw.fired, duration * fail_scale, duration)
    return Results(
        test[keep], job[keep] + job_offset, t[keep], duration[keep], outcome[keep], draw.cause[keep]
    )


def failed_jobs(results: Results, n_jobs: int, job_offset: int) -> np.ndarray:
    mask = (results.outcome == FAILED) | (results.outcome == ERROR)
    flags = np.zeros(n_jobs, dtype=bool)
    flags[results.job[mask] - job_offset] = True
    return np.flatnonzero(flags)


def job_ends(results: Results, n_jobs: int, job_offset: int) -> np.ndarray:
    end = np.zeros(n_jobs)
    np.maximum.at(end, results.job - job_offset, results.t)
    return end
