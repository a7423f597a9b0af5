"""Grade the analysis on simulated fleets against their truth, across scenarios and seeds.

python -m tests.sim.score [--scenario NAME ...] [--seeds 1 2 3]

Prints, per scenario and seed, what was called sick that was not (false positives), what was sick
and missed, dimensions named wrongly, outages missed, and flaky-test precision/recall. A development
tool: the detection tests assert the same things for fixed seeds.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from datetime import datetime

from common.timeutil import to_ms
from controller.analysis.engine import Analysis
from tests.controller.analysis.harness import analyse_fleet
from tests.sim import Fleet, simulate
from tests.sim.random_fleet import random_scenario
from tests.sim.scenarios import SCENARIOS


@dataclass
class Grade:
    false_sick: set[tuple[str, str]] = field(default_factory=set)
    missed_sick: set[tuple[str, str]] = field(default_factory=set)
    wrong_dimension: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    missed_outages: int = 0
    unseen_outages: int = 0  # no test ran during them
    false_outages: int = 0
    false_flaky: set[str] = field(default_factory=set)
    missed_flaky: set[str] = field(default_factory=set)
    flaky_called: int = 0

    def clean(self) -> bool:
        return not (
            self.false_sick
            or self.missed_sick
            or self.wrong_dimension
            or self.missed_outages
            or self.false_outages
            or self.false_flaky
            or self.missed_flaky
        )


def grade(fleet: Fleet, analysis: Analysis) -> Grade:
    truth = fleet.truth
    g = Grade()
    called = {
        (i["kind"], i["entity"]): i
        for i in analysis.incidents
        if i["state"] in ("sick", "suspect", "resolved")
    }
    g.false_sick = set(called) - set(truth.sick)
    g.missed_sick = set(truth.sick) - set(called)
    for key in set(called) & set(truth.sick):
        want, got = truth.sick_dimension[key], called[key]["dimension"]
        if want != got and want != "unknown":
            g.wrong_dimension[key] = (want, got)
    found = [
        (to_ms(datetime.fromisoformat(o["start"])), to_ms(datetime.fromisoformat(o["end"])))
        for o in analysis.outages
    ]
    # An outage between two waves of jobs, where no test ran, leaves nothing to find.
    times = [to_ms(datetime.fromisoformat(r["time"])) for r in fleet.results]
    real = [
        (to_ms(start), to_ms(end))
        for start, end in truth.outages
        if any(to_ms(start) <= t < to_ms(end) for t in times)
    ]
    g.unseen_outages = len(truth.outages) - len(real)
    for s, e in real:
        if not any(a <= e and b >= s for a, b in found):
            g.missed_outages += 1
    g.false_outages = sum(1 for a, b in found if not any(a <= e and b >= s for s, e in real))
    flaky = {t["test_id"] for t in analysis.tests if t["verdict"] == "flaky"}
    g.flaky_called = len(flaky)
    g.false_flaky = flaky - truth.flaky_tests - fleet.noisy_tests()
    g.missed_flaky = truth.flaky_tests - flaky
    return g


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.sim.score", description=__doc__)
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--random", type=int, default=0, help="grade this many random scenarios instead")
    parser.add_argument(
        "--first", type=int, default=0, help="number of the first random scenario (held-out shapes: 36 on)"
    )
    args = parser.parse_args(argv)
    bad = 0
    if args.random:
        runs = [
            (f"random-{n}", lambda n=n: random_scenario(n), seed)
            for n in range(args.first, args.first + args.random)
            for seed in args.seeds
        ]
    else:
        runs = [
            (name, SCENARIOS[name], seed)
            for name in args.scenario or sorted(SCENARIOS)
            for seed in args.seeds
        ]
    for name, make, seed in runs:
        started = time.perf_counter()
        fleet = simulate(make(), seed)
        g = grade(fleet, analyse_fleet(fleet))
        took = time.perf_counter() - started
        status = "ok " if g.clean() else "BAD"
        bad += not g.clean()
        print(
            f"{status} {name:14} seed {seed}: sick {len(fleet.truth.sick)} "
            f"fp {sorted(g.false_sick)} fn {sorted(g.missed_sick)} dim {g.wrong_dimension} "
            f"outages missed {g.missed_outages}/{len(fleet.truth.outages) - g.unseen_outages} false {g.false_outages} "
            f"flaky {g.flaky_called} (fp {len(g.false_flaky)} fn {len(g.missed_flaky)}) [{took:.0f}s]",
            flush=True,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
