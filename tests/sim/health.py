"""What every agent would read, on its reporting grid: disk, memory, clock and cache state over time.

Healthy values wander realistically; events overwrite a window of an agent's rows. Failure generation
looks up the same arrays, so a resource-sensitive test fails exactly where the readings show pressure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter

from tests.sim.events import (
    Dimension,
    Outage,
    PeriodicPressure,
    SickMachine,
    SickPool,
    SickRunner,
    SilentAgent,
    SlowDisk,
    WarningRunner,
)
from tests.sim.scenario import Scenario
from tests.sim.topology import Topology

GIB = 1024**3
DISK_PRESSURE_RATIO = 0.05
MEMORY_PRESSURE_RATIO = 0.15
MEMORY_PRESSURE_PSI = 20.0
CLOCK_PRESSURE_S = 1.0
SICK_CLOCK_OFFSET_S = 30.0
WARNING_CLOCK_OFFSET_S = 2.0
WARNING_DISK_RATIO = 0.03


@dataclass(frozen=True)
class Rollout:
    """A BadImage resolved: which machines run `image` from `onset_s` until `end_s`."""

    image: int
    pool: int
    machines: np.ndarray
    onset_s: float
    dimension: Dimension
    end_s: float = float("inf")


@dataclass
class Health:
    interval: float
    phase: np.ndarray  # (A,) seconds of each agent's first report
    t: np.ndarray  # (A, K) report times, seconds after start
    valid: np.ndarray  # (A, K) inside the simulated span
    sent: np.ndarray  # (A, K) delivered (some reports are lost)
    alive: np.ndarray  # (A, K) the agent runs (no agent, or a silent one, makes no report at all)
    disk_total: np.ndarray
    disk_ratio: np.ndarray
    root_total: np.ndarray
    root_ratio: np.ndarray
    write_ok: np.ndarray
    mem_total: np.ndarray
    mem_avail: np.ndarray
    psi10: np.ndarray
    psi60: np.ndarray
    full10: np.ndarray
    full60: np.ndarray
    oom: np.ndarray
    swap: np.ndarray
    clock: np.ndarray
    ntp_down: np.ndarray
    ntp_servers: np.ndarray  # (A,) 2 or 3
    cache_epoch: np.ndarray  # (A, K) which lockfile generation the agent has adopted
    cache_bad: np.ndarray  # (A, K) -1 when the digest is the pool's, else the id of a wrong digest
    image: np.ndarray  # (A, K)
    boot: np.ndarray  # (A, K) boot generation (a fixed runner reboots)
    check_unknown: np.ndarray  # (A, K, 4) a check timed out: disk, memory, clock, cache

    def grid_index(self, agents: np.ndarray, times: np.ndarray) -> np.ndarray:
        """The last report at or before each time (the first one before an agent's first report)."""
        k = np.floor((times - self.phase[agents]) / self.interval).astype(np.int64)
        out: np.ndarray = np.clip(k, 0, self.t.shape[1] - 1)
        return out

    def pressure(self, dimension: Dimension) -> np.ndarray:
        """Where readings show pressure in `dimension`: what a resource-sensitive test reacts to."""
        out: np.ndarray
        if dimension == "disk":
            out = self.disk_ratio < DISK_PRESSURE_RATIO
        elif dimension == "memory":
            out = (self.mem_avail < MEMORY_PRESSURE_RATIO) | (self.psi10 > MEMORY_PRESSURE_PSI)
        elif dimension == "clock":
            out = np.abs(self.clock) > CLOCK_PRESSURE_S
        elif dimension == "cache":
            out = self.cache_bad >= 0
        else:
            out = np.zeros(self.t.shape, dtype=bool)
        return out


def _ar1(rng: np.random.Generator, shape: tuple[int, int], phi: float, sd: float) -> np.ndarray:
    noise = rng.normal(0.0, sd * np.sqrt(1 - phi**2), size=shape)
    noise[:, 0] = rng.normal(0.0, sd, size=shape[0])
    out: np.ndarray = lfilter([1.0], [1.0, -phi], noise, axis=1)
    return out


def _healthy(scenario: Scenario, topo: Topology, rng: np.random.Generator) -> Health:
    a_count = len(topo.agent_names)
    interval = scenario.report_interval_minutes * 60.0
    k_count = int(scenario.duration_s // interval) + 1
    phase = rng.uniform(0, interval, size=a_count)
    t = phase[:, None] + interval * np.arange(k_count)[None, :]
    shape = (a_count, k_count)
    day = t / 86400.0
    disk_total = rng.choice([100, 150, 250, 500], size=a_count).astype(np.float64) * GIB
    base = rng.uniform(0.3, 0.8, size=a_count)
    # Workspaces fill with build output through the day and are cleaned nightly.
    fill = 0.08 * np.mod(day + rng.uniform(0, 1, size=a_count)[:, None], 1.0)
    disk_ratio = np.clip(base[:, None] - fill + rng.normal(0, 0.002, size=shape), 0.001, 0.999)
    mem_base = rng.uniform(0.45, 0.68, size=a_count)
    mem_avail = np.clip(mem_base[:, None] + _ar1(rng, shape, 0.7, 0.03), 0.3, 0.9)
    psi10 = rng.gamma(0.6, 0.5, size=shape)
    machine_bias = rng.normal(0, 0.002, size=len(topo.machine_names))
    clock = machine_bias[topo.agent_machine][:, None] + _ar1(rng, shape, 0.98, 0.0025)
    rollover = np.zeros(shape, dtype=np.int64)
    for p in range(len(topo.pools)):
        agents = topo.pool_agents(p)
        changes = np.cumsum(rng.uniform(12, 36, size=int(scenario.duration_days) + 3) * 3600.0)
        lag = rng.uniform(0, 1800, size=len(agents))
        rollover[agents] = np.searchsorted(changes, t[agents] - lag[:, None], side="right")
    image = np.repeat(topo.machine_image[topo.agent_machine][:, None], k_count, axis=1)
    h = Health(
        interval=interval,
        phase=phase,
        t=t,
        valid=t < scenario.duration_s,
        sent=rng.random(shape) >= scenario.report_loss_prob,
        alive=np.repeat(
            np.array([topo.pools[int(p)].agents for p in topo.agent_pool], dtype=bool)[:, None],
            k_count,
            axis=1,
        ),
        disk_total=disk_total,
        disk_ratio=disk_ratio,
        root_total=np.full(a_count, 30.0 * GIB),
        root_ratio=np.clip(rng.uniform(0.35, 0.7, size=a_count)[:, None] + rng.normal(0, 0.001, shape), 0, 1),
        write_ok=np.ones(shape, dtype=bool),
        mem_total=rng.choice([16, 32, 64], size=a_count).astype(np.float64) * GIB,
        mem_avail=mem_avail,
        psi10=psi10,
        psi60=0.6 * psi10 + rng.gamma(0.6, 0.3, size=shape),
        full10=rng.gamma(0.3, 0.1, size=shape),
        full60=rng.gamma(0.3, 0.05, size=shape),
        oom=np.zeros(shape, dtype=np.int64),
        swap=np.where(rng.random(shape) < 0.2, rng.uniform(0, 0.02, size=shape), 0.0),
        clock=clock,
        ntp_down=np.zeros(shape, dtype=bool),
        ntp_servers=rng.choice([2, 3, 3], size=a_count),
        cache_epoch=rollover,
        cache_bad=np.full(shape, -1, dtype=np.int64),
        image=image,
        boot=np.zeros(shape, dtype=np.int64),
        check_unknown=rng.random((a_count, k_count, 4)) < 0.001,
    )
    _share_machine_state(h, topo, rng)
    return h


_MACHINE_STATE = (
    "disk_total",
    "root_total",
    "mem_total",
    "disk_ratio",
    "root_ratio",
    "mem_avail",
    "psi10",
    "psi60",
    "full10",
    "full60",
    "swap",
    "clock",
)


def _share_machine_state(h: Health, topo: Topology, rng: np.random.Generator) -> None:
    """Runners on one VM see one disk, one memory and one clock: copy the first agent's healthy state."""
    for m in range(len(topo.machine_names)):
        agents = topo.machine_agents(m).tolist()
        if len(agents) < 2:
            continue
        first = agents[0]
        for a in agents[1:]:
            for name in _MACHINE_STATE:
                getattr(h, name)[a] = getattr(h, name)[first]
            h.disk_ratio[a] += rng.normal(0, 0.001, size=h.disk_ratio.shape[1])
            h.clock[a] += rng.normal(0, 0.0002, size=h.clock.shape[1])


def _apply_bad(
    h: Health,
    rng: np.random.Generator,
    rows: np.ndarray,
    mask: np.ndarray,
    dimension: Dimension,
    severe: bool,
    cache_id: int,
) -> None:
    """Overwrite the masked cells of `rows` with sick (`severe`) or warning-level readings."""
    for i, a in enumerate(rows.tolist()):
        m = mask[i]
        n = int(m.sum())
        if n == 0:
            continue
        if dimension == "disk":
            if severe:
                free = rng.uniform(0.2, 0.9, size=n) * GIB
                h.disk_ratio[a, m] = free / h.disk_total[a]
                h.write_ok[a, m] = False
            else:
                h.disk_ratio[a, m] = WARNING_DISK_RATIO + rng.normal(0, 0.001, size=n)
        elif dimension == "memory":
            if severe:
                h.mem_avail[a, m] = rng.uniform(0.02, 0.06, size=n)
                h.psi10[a, m] = rng.uniform(30, 80, size=n)
                h.psi60[a, m] = rng.uniform(25, 60, size=n)
                h.full10[a, m] = rng.uniform(5, 30, size=n)
                h.full60[a, m] = rng.uniform(4, 20, size=n)
                h.oom[a, m] = rng.poisson(1.5, size=n)
                h.swap[a, m] = rng.uniform(0.3, 0.9, size=n)
            else:
                h.mem_avail[a, m] = rng.uniform(0.07, 0.10, size=n)
                h.psi10[a, m] = rng.uniform(20, 35, size=n)
                h.psi60[a, m] = rng.uniform(15, 30, size=n)
        elif dimension == "clock":
            offset = SICK_CLOCK_OFFSET_S if severe else WARNING_CLOCK_OFFSET_S
            h.clock[a, m] = offset + rng.normal(0, 0.01, size=n)
        elif dimension == "cache":
            h.cache_bad[a, m] = cache_id


def _window(h: Health, rows: np.ndarray, t0: float, t1: float) -> np.ndarray:
    times = h.t[rows]
    mask: np.ndarray = (times >= t0) & (times < t1)
    return mask


def _ramp_disk(h: Health, rows: np.ndarray, t0: float, t1: float) -> None:
    """A disk does not fill in an instant: slide from the healthy value to ~1% over [t0, t1)."""
    for a in rows.tolist():
        m = (h.t[a] >= t0) & (h.t[a] < t1)
        if m.any():
            frac = (h.t[a, m] - t0) / (t1 - t0)
            h.disk_ratio[a, m] = h.disk_ratio[a, m] * (1 - frac) + 0.01 * frac


def build_health(
    scenario: Scenario, topo: Topology, rollouts: list[Rollout], rng: np.random.Generator
) -> Health:
    h = _healthy(scenario, topo, rng)
    lead = scenario.readings_lead_minutes * 60.0
    forever = scenario.duration_s + 86400.0
    for ro in rollouts:
        rows = np.flatnonzero(np.isin(topo.agent_machine, ro.machines))
        for a in rows.tolist():
            h.image[a, (h.t[a] >= ro.onset_s) & (h.t[a] < ro.end_s)] = ro.image
        if ro.dimension != "unknown":
            end = min(forever, ro.end_s)
            _apply_bad(h, rng, rows, _window(h, rows, ro.onset_s, end), ro.dimension, True, 2000 + ro.image)
    for ev in scenario.events:
        if isinstance(ev, SickRunner | SickMachine | SickPool):
            if isinstance(ev, SickRunner):
                rows = np.array([topo.agent_index(ev.runner)])
            elif isinstance(ev, SickMachine):
                rows = topo.machine_agents(topo.machine_index(ev.machine))
            else:
                rows = topo.pool_agents(topo.pool_index(ev.pool))
            onset = scenario.offset_s(ev.onset)
            end = scenario.offset_s(ev.end) if ev.end is not None else forever
            # A poisoned runner's digest is its own; a sick pool's runners agree on the bad one.
            pool_id = 4000 + int(topo.agent_pool[rows[0]])
            cache_id = pool_id if isinstance(ev, SickPool) else 3000 + int(rows[0])
            if ev.dimension == "disk":
                _ramp_disk(h, rows, onset - lead - 3600.0, onset - lead)
            _apply_bad(h, rng, rows, _window(h, rows, onset - lead, end), ev.dimension, True, cache_id)
            if ev.end is not None:
                for a in rows.tolist():
                    h.boot[a, h.t[a] >= end] += 1
        elif isinstance(ev, SlowDisk):
            a = topo.agent_index(ev.runner)
            start = scenario.offset_s(ev.start)
            m = h.t[a] >= start
            frac = np.clip((h.t[a, m] - start) / (ev.days * 86400.0), 0, 1)
            h.disk_ratio[a, m] = np.maximum(h.disk_ratio[a, m] * (1 - frac) + 0.002 * frac, 0.002)
            h.write_ok[a, h.disk_ratio[a] < 0.004] = False
        elif isinstance(ev, WarningRunner):
            rows = np.array([topo.agent_index(ev.runner)])
            t0 = scenario.offset_s(ev.start) if ev.start is not None else -forever
            t1 = scenario.offset_s(ev.end) if ev.end is not None else forever
            _apply_bad(h, rng, rows, _window(h, rows, t0, t1), ev.dimension, False, 5000 + int(rows[0]))
        elif isinstance(ev, PeriodicPressure):
            rows = np.array([topo.agent_index(ev.runner)])
            period = ev.period_hours * 3600.0
            mask = np.mod(h.t[rows] / period, 1.0) < ev.duty
            _apply_bad(h, rng, rows, mask, ev.dimension, False, 5000 + int(rows[0]))
        elif isinstance(ev, SilentAgent):
            rows = np.array([topo.agent_index(ev.runner)])
            t0 = scenario.offset_s(ev.start) if ev.start is not None else -forever
            t1 = scenario.offset_s(ev.end) if ev.end is not None else forever
            h.alive[rows] &= ~_window(h, rows, t0, t1)
    h.disk_ratio = np.clip(h.disk_ratio, 0.0, 1.0)
    return h


def apply_outage(h: Health, scenario: Scenario, outage: Outage, agents: np.ndarray) -> None:
    t0 = scenario.offset_s(outage.start)
    h.ntp_down[agents] |= _window(h, agents, t0, t0 + outage.minutes * 60.0)
