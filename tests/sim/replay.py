"""Replay a simulated fleet hour by hour as the controller's background loop sees it: a full pass
every few hours, a screen of the rows since the last full pass every hour between, and a full pass at
once when a screen raises something (controller/analysis/service.py). Prints, per truly sick entity,
its onset and the first hour a screen raised it and a full pass decided it; and what screens raised
that was not sick. A tool for judging changes to controller/analysis/screen.py, not a test:

    python -m tests.sim.replay --scenario kitchen_sink --seeds 1 2
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

import numpy as np

from common.timeutil import iso, to_ms
from controller.analysis.config import AnalysisConfig
from controller.analysis.engine import analyse
from controller.analysis.screen import Batch, Model, NewReadings, build_model, screen
from tests.controller.analysis.harness import frame_of
from tests.sim import scenarios, simulate
from tests.sim.scenario import Scenario
from tests.sim.truth import Truth

HOUR_MS = 3_600_000


@dataclass
class Replay:
    truth: Truth
    hours: int
    full_passes: int = 0
    raising_screens: int = 0
    first_raised: dict[tuple[str, str], int] = field(default_factory=dict)
    first_decided: dict[tuple[str, str], int] = field(default_factory=dict)
    first_resolved: dict[tuple[str, str], int] = field(default_factory=dict)
    recovery_raises: int = 0
    outages: list[tuple[int, str, str]] = field(default_factory=list)  # (hour, start, end)


def replay(scenario: Scenario, seed: int, full_every_h: int = 6) -> Replay:
    fleet = simulate(scenario, seed=seed)
    frame = frame_of(fleet).canonical()  # rows in time order: a batch is a slice
    config = AnalysisConfig()
    start = to_ms(scenario.start)
    out = Replay(truth=fleet.truth, hours=int(scenario.duration_days * 24))
    model: Model | None = None
    covered_to = 0

    def full_pass(hour: int, until_ms: int) -> Model:
        analysis = analyse(frame.before(until_ms), config=config)
        out.full_passes += 1
        for incident in analysis.incidents:
            key = (incident["kind"], incident["entity"])
            out.first_decided.setdefault(key, hour)
            if incident["state"] == "resolved":
                out.first_resolved.setdefault(key, hour)
        return build_model(analysis, config)

    for hour in range(1, out.hours + 1):
        until_ms = start + hour * HOUR_MS
        if model is None or hour % full_every_h == 0:
            model, covered_to = full_pass(hour, until_ms), until_ms
            continue
        lo, hi = np.searchsorted(frame.time_ms, [covered_to, until_ms])
        r_lo, r_hi = np.searchsorted(frame.r_time_ms, [covered_to, until_ms])
        readings = NewReadings.of(frame, int(r_lo), int(r_hi))
        found = screen(model, Batch.of(frame, int(lo), int(hi)), config, readings)
        for suspect in found.suspects:
            out.first_raised.setdefault((suspect["kind"], suspect["entity"]), hour)
        out.outages += [(hour, o["start"], o["end"]) for o in found.outages]
        if found.raised:
            out.raising_screens += 1
            out.recovery_raises += bool(found.recovering) and not (found.suspects or found.outages)
            model, covered_to = full_pass(hour, until_ms), until_ms
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenario", default="kitchen_sink")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--full-every", type=int, default=6, help="hours between scheduled full passes")
    args = parser.parse_args()
    for seed in args.seeds:
        scenario = getattr(scenarios, args.scenario)()
        found = replay(scenario, seed, args.full_every)
        truth = found.truth
        print(
            f"== {args.scenario} seed {seed}: {found.hours} h, {found.full_passes} full passes, "
            f"{found.raising_screens} raised by a screen ({found.recovery_raises} by a recovery sign alone)"
        )
        for key in sorted(truth.sick):
            onset = (truth.sick_onset[key] - scenario.start).total_seconds() / 3600
            print(
                f"  sick {key[0]} {key[1]}, onset at {onset:.1f} h: raised at {found.first_raised.get(key)}, "
                f"decided at {found.first_decided.get(key)}, resolved at {found.first_resolved.get(key)}"
            )
        false = {key: hour for key, hour in found.first_raised.items() if key not in truth.sick}
        print(f"  raised, not sick: {false or 'none'}")
        print(
            f"  outages raised: {[(h, s[11:16], e[11:16]) for h, s, e in found.outages] or 'none'}; "
            f"true: {[(iso(to_ms(a))[11:16], iso(to_ms(b))[11:16]) for a, b in truth.outages] or 'none'}"
        )


if __name__ == "__main__":
    main()
