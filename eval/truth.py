"""The one truth schema every simulator's truth.json is converted to (eval/adapters.py), and the scorer
(eval/score.py) reads. Times are POSIX seconds (UTC); None where the truth has none.

Kinds are the product's: runner, machine, image, pool. Dimensions: disk, memory, clock, cache, unknown.
Test labels: healthy, flaky, broken, platform, code (a commit's failures wherever it runs), resource
(fails with a sick runner's resource), other. See eval/README.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Key = tuple[str, str]  # (kind, entity)


@dataclass(frozen=True)
class RunnerInfo:
    machine: str
    pool: str
    images: frozenset[str] = frozenset()


@dataclass(frozen=True)
class SickEntity:
    """A true fault. `accept` are the (kind, entity) names that count as naming it exactly (the entity
    itself, or the VM of a lone runner); a name that covers some of its runners but is not accepted is
    a coarser or finer entity (wrong granularity)."""

    id: str
    kind: str
    entity: str
    accept: frozenset[Key]
    dimensions: frozenset[str]  # accepted dimensions; "unknown" in the truth accepts any
    accept_states: frozenset[str]  # sick and/or suspect
    spans: tuple[tuple[float, float | None], ...]  # (onset, end or None if sick to the end)
    first_failure: float | None  # the first failing result it caused after onset
    last_failure: float | None
    failures: int
    runners: frozenset[str]  # runner ids (or ephemeral hosts) it touched
    related: frozenset[Key] = frozenset()  # parents and children named explicitly (coarser/finer)
    weak: bool = False  # too few failures to require (the simulator's own rule): not counted
    gradual: bool = False  # a slow ramp: onset tolerance 24 h, not 6 h
    label: str = ""  # the simulator's sort, for the error lines

    @property
    def onset(self) -> float:
        return self.spans[0][0]

    @property
    def end(self) -> float | None:
        return self.spans[-1][1]


@dataclass(frozen=True)
class TestTruth:
    label: str  # healthy|flaky|broken|platform|code|resource|other
    accept: frozenset[str]  # product verdicts that are right for it
    runs: int
    failures: int
    own_failures: int  # failures of its own (outside incidents and outages)
    weak: bool = False  # the simulator's own rule: a miss is not counted


@dataclass(frozen=True)
class OutageTruth:
    start: float
    end: float
    weak: bool = False  # may be missed
    allowed: bool = False  # neither required nor wrong (a preemption wave)


@dataclass(frozen=True)
class Truth:
    sim: str
    seed: str
    start: float
    end: float
    sick: tuple[SickEntity, ...]
    herrings: dict[Key, str]  # healthy entities with bad-looking readings -> what they are
    tests: dict[str, TestTruth]
    outages: tuple[OutageTruth, ...]
    runners: dict[str, RunnerInfo] = field(default_factory=dict)
    ephemeral_machines: frozenset[str] = frozenset()

    def covers(self, kind: str, entity: str) -> set[str]:
        """Runner ids an entity covers (an ephemeral pod stands for its host)."""
        if kind == "runner":
            for m in self.ephemeral_machines:
                if entity.startswith(m + "-"):
                    return {m}
            return {entity}
        if kind == "machine":
            on = {r for r, i in self.runners.items() if i.machine == entity}
            return on or {entity}
        if kind == "pool":
            return {r for r, i in self.runners.items() if i.pool == entity}
        if kind == "image":
            return {r for r, i in self.runners.items() if entity in i.images}
        return set()
