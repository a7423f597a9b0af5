"""`simulate(scenario, seed)`: the whole pipeline from knobs to a Fleet, deterministic in the seed."""

from __future__ import annotations

import gc
from datetime import timedelta

import numpy as np

from tests.sim.catalog import build_catalog
from tests.sim.failures import Causes, Results, execute, failed_jobs, job_ends, job_images
from tests.sim.fleet import Fleet
from tests.sim.health import Health, apply_outage, build_health
from tests.sim.plan import Plan, build_plan
from tests.sim.records import report_records, result_records
from tests.sim.scenario import Scenario
from tests.sim.schedule import EphemeralNames, Jobs, build_commits, build_jobs, place_retries
from tests.sim.topology import Topology, build_topology
from tests.sim.truth import TruthDraft

RETRY_DELAY_S = (60.0, 600.0)


def simulate(scenario: Scenario, seed: int) -> Fleet:
    """Generate the fleet's history for `scenario`; the same seed always gives the same records."""
    # Hundreds of thousands of small dicts would trigger the cyclic collector again and again for nothing.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _simulate(scenario, seed)
    finally:
        if was_enabled:
            gc.enable()


def _simulate(scenario: Scenario, seed: int) -> Fleet:
    streams = np.random.SeedSequence([seed, 0x5EED]).spawn(8)
    rngs = [np.random.default_rng(s) for s in streams]
    catalog = build_catalog(scenario)
    topo = build_topology(scenario)
    plan, draft = build_plan(scenario, catalog, topo, rngs[0])
    health = build_health(scenario, topo, plan.rollouts, rngs[1])
    for ev, _t0, _t1, agents in plan.outages:
        apply_outage(health, scenario, ev, agents)
    _slow_disk_truth(scenario, plan.slow_disks, health, draft)
    _unconfirmable_dimensions(scenario, topo, plan, health, draft)
    forced = [t for _, since, until in plan.broken for t in (since, until) if t < scenario.duration_s]
    commits = build_commits(scenario, forced, rngs[2])
    names = EphemeralNames(rngs[3])
    jobs = build_jobs(scenario, catalog, topo, commits, rngs[3], names)
    causes = Causes()
    first = execute(scenario, catalog, topo, health, plan, commits, causes, jobs, 0, rngs[4])

    # CI re-runs a failed job (attempt 2) a few minutes later, on whatever runner the routing picks.
    bad = failed_jobs(first, len(jobs), 0)
    bad = bad[rngs[5].random(len(bad)) < scenario.retry_prob]
    again = jobs.take(bad)
    ends = job_ends(first, len(jobs), 0)
    again.start = ends[bad] + rngs[5].uniform(*RETRY_DELAY_S, size=len(bad))
    again.attempt = again.attempt + 1
    place_retries(topo, catalog, jobs, ends, again, rngs[5], names)
    keep = np.flatnonzero(again.start < scenario.duration_s)
    again = again.take(keep)
    second = execute(scenario, catalog, topo, health, plan, commits, causes, again, len(jobs), rngs[6])
    all_jobs = Jobs.concat([jobs, again])
    results = Results.concat([first, second])

    job_rank = np.empty(len(all_jobs), dtype=np.int64)
    job_rank[np.argsort(all_jobs.start, kind="stable")] = np.arange(len(all_jobs))
    job_ids = [f"job-{r + 1}" for r in job_rank.tolist()]
    n_runs = int(all_jobs.run.max()) + 1 if len(all_jobs) else 0
    run_start = np.full(n_runs, np.inf)
    np.minimum.at(run_start, all_jobs.run, all_jobs.start)
    run_rank = np.empty(n_runs, dtype=np.int64)
    run_rank[np.argsort(run_start, kind="stable")] = np.arange(n_runs)
    run_ids = [f"run-{r + 1}" for r in run_rank.tolist()]

    images = job_images(all_jobs, topo, plan)
    rec, cause_labels, rms = result_records(
        scenario, catalog, topo, all_jobs, images, job_ids, run_ids, commits, results, causes, rngs[7]
    )
    reports, pms = report_records(scenario, topo, health, seed, rngs[7])
    return Fleet(
        results=rec,
        reports=reports,
        truth=draft.freeze(),
        causes=cause_labels,
        result_ms=rms.tolist(),
        report_ms=pms.tolist(),
    )


def _unconfirmable_dimensions(
    scenario: Scenario, topo: Topology, plan: Plan, health: Health, draft: TruthDraft
) -> None:
    """With no agent reporting around the onset, the truth can only say `unknown`: nothing confirms it."""
    lead = scenario.readings_lead_minutes * 60.0
    for s in plan.sick:
        kind, name = s.label.split(":", 2)[1:]
        if (kind, name) not in draft.sick or s.dimension == "unknown":
            continue
        if s.level == "agent":
            agents = np.array([s.where])
        elif s.level == "machine":
            agents = topo.machine_agents(s.where)
        elif s.level == "pool":
            agents = topo.pool_agents(s.where)
        else:
            ro = next(r for r in plan.rollouts if r.image == s.where)
            agents = np.flatnonzero(np.isin(topo.agent_machine, ro.machines))
        window = (health.t[agents] >= s.onset_s - lead) & (health.t[agents] < s.onset_s + 3600.0)
        if not (health.alive[agents] & window).any():
            draft.sick[(kind, name)] = ("unknown", draft.sick[(kind, name)][1])


def _slow_disk_truth(
    scenario: Scenario, slow: list[tuple[str, int, float, float]], health: Health, draft: TruthDraft
) -> None:
    """A slow disk's onset is when its readings first cross the threshold, as an operator would date it."""
    for runner, a, start, threshold in slow:
        below = np.flatnonzero((health.t[a] >= start) & (health.disk_ratio[a] < threshold) & health.valid[a])
        if len(below):
            onset_ms = round(float(health.t[a, below[0]]) * 1000)
            draft.sick[("runner", runner)] = ("disk", scenario.start + timedelta(milliseconds=onset_ms))
