"""A seeded fleet simulator with known truth: CI results and agent reports for a fleet with injected causes.

    fleet = simulate(kitchen_sink(), seed=1)
    fleet.validate(); fleet.truth.sick  # {("runner", "linux-03"), ...}
"""

from tests.sim.catalog import CATEGORIES, Catalog, build_catalog
from tests.sim.events import (
    BadImage,
    BrokenTest,
    Dimension,
    Event,
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
