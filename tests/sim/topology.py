"""Who is in the fleet: pools, persistent runners, machines (hosts) and the agents that report on them.

Persistent runners each run one agent. An ephemeral pool's jobs get a fresh runner id each, so its agents
run on the hosts and report under the machine name.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tests.sim.catalog import Catalog
from tests.sim.scenario import PoolSpec, Scenario


@dataclass
class Topology:
    pools: list[PoolSpec]
    images: list[str]
    runner_names: list[str]
    runner_pool: np.ndarray
    runner_machine: np.ndarray
    runner_agent: np.ndarray
    runner_group: np.ndarray  # label group (label sharding), else 0
    machine_names: list[str]
    machine_pool: np.ndarray
    machine_image: np.ndarray  # image before any rollout
    agent_names: list[str]
    agent_pool: np.ndarray
    agent_machine: np.ndarray
    agent_runner: np.ndarray  # persistent runner, -1 for an ephemeral host's agent

    def pool_index(self, name: str) -> int:
        for i, pool in enumerate(self.pools):
            if pool.name == name:
                return i
        raise ValueError(f"unknown pool {name!r}; pools: {', '.join(p.name for p in self.pools)}")

    def runner_index(self, name: str) -> int:
        try:
            return self.runner_names.index(name)
        except ValueError:
            known = ", ".join(self.runner_names)
            raise ValueError(f"unknown persistent runner {name!r}; runners: {known}") from None

    def agent_index(self, name: str) -> int:
        try:
            return self.agent_names.index(name)
        except ValueError:
            raise ValueError(f"no agent {name!r}; agents: {', '.join(self.agent_names)}") from None

    def machine_index(self, name: str) -> int:
        try:
            return self.machine_names.index(name)
        except ValueError:
            raise ValueError(f"unknown machine {name!r}; machines: {', '.join(self.machine_names)}") from None

    def image_index(self, name: str) -> int:
        if name not in self.images:
            self.images.append(name)
        return self.images.index(name)

    def runner_labels(self, runner: int) -> tuple[str, ...]:
        pool = self.pools[int(self.runner_pool[runner])]
        labels = (*pool.labels,)
        if pool.sharding == "label":
            labels += (f"group-{int(self.runner_group[runner])}",)
        return labels

    def reachable_tests(self, catalog: Catalog, agents: np.ndarray) -> np.ndarray:
        """The tests the given agents can ever run: routing and sharding decide, not chance."""
        parts: list[np.ndarray] = []
        for a in agents.tolist():
            pool = self.pools[int(self.agent_pool[a])]
            shards = catalog.shards[pool.name]
            r = int(self.agent_runner[a])
            if r >= 0 and pool.sharding == "static":
                k = int(np.flatnonzero(self.pool_runners(int(self.agent_pool[a])) == r)[0])
                parts.append(shards[k])
            elif r >= 0 and pool.sharding == "label":
                g, groups = int(self.runner_group[r]), min(pool.label_groups, pool.runners)
                parts.extend(shards[k] for k in range(len(shards)) if k % groups == g)
            else:
                parts.extend(shards)
        return np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)

    def pool_runners(self, pool: int) -> np.ndarray:
        return np.flatnonzero(self.runner_pool == pool)

    def pool_agents(self, pool: int) -> np.ndarray:
        return np.flatnonzero(self.agent_pool == pool)

    def machine_agents(self, machine: int) -> np.ndarray:
        return np.flatnonzero(self.agent_machine == machine)


def build_topology(scenario: Scenario) -> Topology:
    names = [p.name for p in scenario.pools]
    if len(set(names)) != len(names) or not names:
        raise ValueError(f"pool names must be present and unique: {names}")
    images: list[str] = []
    runners: list[str] = []
    r_pool: list[int] = []
    r_machine: list[int] = []
    r_group: list[int] = []
    machines: list[str] = []
    m_pool: list[int] = []
    m_image: list[int] = []
    for p, pool in enumerate(scenario.pools):
        pool_images = pool.image_names()
        for image in pool_images:
            if image not in images:
                images.append(image)
        if pool.runners < 1:
            raise ValueError(f"pool {pool.name!r} needs at least one runner")
        n_machines = pool.hosts if pool.ephemeral else -(-pool.runners // max(1, pool.runners_per_machine))
        first = len(machines)
        for m in range(n_machines):
            kind = "host" if pool.ephemeral else "vm"
            machines.append(f"{pool.name}-{kind}-{m + 1:02d}")
            m_pool.append(p)
            m_image.append(images.index(pool_images[m % len(pool_images)]))
        if pool.ephemeral:
            continue
        groups = max(1, min(pool.label_groups, pool.runners))
        for i in range(pool.runners):
            runners.append(f"{pool.name}-{i + 1:02d}")
            r_pool.append(p)
            r_machine.append(first + i // max(1, pool.runners_per_machine))
            r_group.append(i % groups)
    agent_names: list[str] = []
    a_pool: list[int] = []
    a_machine: list[int] = []
    a_runner: list[int] = []
    for p, pool in enumerate(scenario.pools):
        if pool.ephemeral:
            for m in (i for i, mp in enumerate(m_pool) if mp == p):
                agent_names.append(machines[m])
                a_pool.append(p)
                a_machine.append(m)
                a_runner.append(-1)
        else:
            for r in (i for i, rp in enumerate(r_pool) if rp == p):
                agent_names.append(runners[r])
                a_pool.append(p)
                a_machine.append(r_machine[r])
                a_runner.append(r)
    runner_agent = np.empty(len(runners), dtype=np.int64)
    for a, r in enumerate(a_runner):
        if r >= 0:
            runner_agent[r] = a
    return Topology(
        pools=list(scenario.pools),
        images=images,
        runner_names=runners,
        runner_pool=np.asarray(r_pool, dtype=np.int64),
        runner_machine=np.asarray(r_machine, dtype=np.int64),
        runner_agent=runner_agent,
        runner_group=np.asarray(r_group, dtype=np.int64),
        machine_names=machines,
        machine_pool=np.asarray(m_pool, dtype=np.int64),
        machine_image=np.asarray(m_image, dtype=np.int64),
        agent_names=agent_names,
        agent_pool=np.asarray(a_pool, dtype=np.int64),
        agent_machine=np.asarray(a_machine, dtype=np.int64),
        agent_runner=np.asarray(a_runner, dtype=np.int64),
    )
