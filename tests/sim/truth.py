"""What really happened in a simulated fleet: the answers a detector is graded against."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Truth:
    sick: frozenset[tuple[str, str]]  # (kind, entity), kind in runner|machine|image|pool
    sick_dimension: dict[tuple[str, str], str]  # -> disk|memory|clock|cache|unknown
    sick_onset: dict[tuple[str, str], datetime]
    outages: tuple[tuple[datetime, datetime], ...]
    flaky_tests: frozenset[str]
    broken_tests: frozenset[str]
    platform_tests: frozenset[str]
    resource_sensitive_tests: frozenset[str]
    warning_runners: frozenset[str]  # bad-looking readings, no failure excess (red herrings)
    interaction: frozenset[tuple[str, str]]  # (test_id, runner_id)
    # Extras beyond the brief, defaulted so older constructions keep working:
    hard_shards: frozenset[tuple[str, str]] = frozenset()  # (pool, shard): hard tests, not a sick runner
    silent_agents: frozenset[str] = frozenset()  # agents that sent no reports for a while (no evidence)

    def to_json(self) -> dict[str, Any]:
        def iso(t: datetime) -> str:
            return t.isoformat().replace("+00:00", "Z")

        return {
            "sick": [
                {
                    "kind": k,
                    "entity": e,
                    "dimension": self.sick_dimension[(k, e)],
                    "onset": iso(self.sick_onset[(k, e)]),
                }
                for k, e in sorted(self.sick)
            ],
            "outages": [{"start": iso(a), "end": iso(b)} for a, b in self.outages],
            "flaky_tests": sorted(self.flaky_tests),
            "broken_tests": sorted(self.broken_tests),
            "platform_tests": sorted(self.platform_tests),
            "resource_sensitive_tests": sorted(self.resource_sensitive_tests),
            "warning_runners": sorted(self.warning_runners),
            "interaction": [{"test_id": t, "runner": r} for t, r in sorted(self.interaction)],
            "hard_shards": [{"pool": p, "shard": s} for p, s in sorted(self.hard_shards)],
            "silent_agents": sorted(self.silent_agents),
        }


@dataclass
class TruthDraft:
    sick: dict[tuple[str, str], tuple[str, datetime]] = field(default_factory=dict)  # -> dimension, onset
    outages: list[tuple[datetime, datetime]] = field(default_factory=list)
    flaky_tests: set[str] = field(default_factory=set)
    broken_tests: set[str] = field(default_factory=set)
    platform_tests: set[str] = field(default_factory=set)
    resource_sensitive_tests: set[str] = field(default_factory=set)
    warning_runners: set[str] = field(default_factory=set)
    interaction: set[tuple[str, str]] = field(default_factory=set)
    hard_shards: set[tuple[str, str]] = field(default_factory=set)
    silent_agents: set[str] = field(default_factory=set)

    def freeze(self) -> Truth:
        sick_names = {name for _, name in self.sick}
        return Truth(
            sick=frozenset(self.sick),
            sick_dimension={k: v[0] for k, v in sorted(self.sick.items())},
            sick_onset={k: v[1] for k, v in sorted(self.sick.items())},
            outages=tuple(sorted(self.outages)),
            flaky_tests=frozenset(self.flaky_tests),
            broken_tests=frozenset(self.broken_tests),
            platform_tests=frozenset(self.platform_tests),
            resource_sensitive_tests=frozenset(self.resource_sensitive_tests),
            warning_runners=frozenset(self.warning_runners - sick_names),
            interaction=frozenset(self.interaction),
            hard_shards=frozenset(self.hard_shards),
            silent_agents=frozenset(self.silent_agents),
        )
