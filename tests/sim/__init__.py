"""A seeded fleet simulator with known truth: CI results and agent reports for a fleet with injected causes.

    from tests.sim import simulate
    from tests.sim.scenarios import kitchen_sink, seed_story, quiet_fleet, storm

    fleet = simulate(seed_story(), seed=1)
    fleet.results        # public result dicts, time-ordered, valid for common.results.TestResult
    fleet.reports        # agent report dicts, time-ordered, valid for common.reports.AgentReport
    fleet.truth.sick     # {("runner", "linux-03")}
    fleet.causes         # the true cause of each result ("" for a pass), aligned with fleet.results

A `Scenario` holds the knobs (pools, tests, cadence) and a tuple of events; the same scenario and seed give
byte-identical output. Test ids come from `build_catalog(scenario)`, which ignores the seed, so events can
name tests (or give their index) and the ready-made scenarios pick theirs by shard and kind.

Pipeline: catalog (tests, shards) -> topology (runners, machines, agents) -> plan (events resolved, truth)
-> health (readings on each agent's reporting grid) -> schedule (runs, jobs, queueing) -> failures
(outcomes and causes) -> records (wire dicts).
"""

from tests.sim.catalog import CATEGORIES, Catalog, build_catalog
from tests.sim.events import (
    BadImage,
    BrokenTest,
    Dimension,
    Event,
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
from tests.sim.fleet import Fleet
from tests.sim.scenario import PoolSpec, Scenario
from tests.sim.simulate import simulate
from tests.sim.truth import Truth

__all__ = [
    "CATEGORIES",
    "BadImage",
    "BrokenTest",
    "Catalog",
    "Dimension",
    "Event",
    "FlakyCluster",
    "FlakyTest",
    "Fleet",
    "HardShard",
    "Interaction",
    "Outage",
    "PeriodicPressure",
    "PlatformTest",
    "PoolSpec",
    "ResourceSensitiveTest",
    "Scenario",
    "SickMachine",
    "SickPool",
    "SickRunner",
    "SilentAgent",
    "SlowDisk",
    "Truth",
    "WarningRunner",
    "build_catalog",
    "simulate",
]
