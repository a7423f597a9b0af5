"""The table: every simulator x seed a row, then a spread line (min/median/max over seeds) per simulator."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from eval.score import WRONG_FLAKY, Score

Cell = float | None


def _pct(x: float | None) -> Cell:
    return None if x is None else 100.0 * x


def _n(*kinds: str) -> Callable[[Score], Cell]:
    return lambda s: float(sum(s.errors[k] for k in kinds))


COLUMNS: list[tuple[str, str, Callable[[Score], Cell]]] = [
    ("sick", "non-weak sick entities", lambda s: float(s.sick)),
    ("found", "named exactly", lambda s: float(s.found)),
    ("miss", "MISSED-SICK", _n("MISSED-SICK")),
    ("wrong", "WRONG-ENTITY: only a coarser or finer entity named", _n("WRONG-ENTITY")),
    ("extra", "EXTRA-ENTITY: named exactly and also a coarser or finer one", _n("EXTRA-ENTITY")),
    ("dim", "WRONG-DIMENSION", _n("WRONG-DIMENSION")),
    ("state", "WRONG-STATE (sick vs suspect)", _n("WRONG-STATE")),
    ("onset", "ONSET-OFF (over 6 h, 24 h for slow faults)", _n("ONSET-OFF")),
    ("resol", "NOT-RESOLVED + FALSE-RESOLVED", _n("NOT-RESOLVED", "FALSE-RESOLVED")),
    ("f-inc", "FALSE-INCIDENT: an incident on a healthy entity", _n("FALSE-INCIDENT")),
    ("h-drn", "HEALTHY-DRAINED: a healthy runner cordoned", _n("HEALTHY-DRAINED")),
    ("h-sck", "HEALTHY-CALLED-SICK: a healthy runner's health sick/suspect", _n("HEALTHY-CALLED-SICK")),
    ("flk-P", "flaky precision %", lambda s: _pct(s.precision)),
    ("flk-R", "flaky recall % (flaky tests with >= 3 failures of their own)", lambda s: _pct(s.recall)),
    ("flk-n", "flaky tests with >= 3 failures of their own", lambda s: float(s.flaky_due)),
    (
        "flk-ms",
        "MISSED-FLAKY: flaky tests the simulator does not call weak, not called flaky",
        _n("MISSED-FLAKY"),
    ),
    *[
        (f"{lab[:4]}>f", f"{lab} tests called flaky", _n(f"{lab.upper()}-CALLED-FLAKY"))
        for lab in WRONG_FLAKY
    ],
    ("t-oth", "TEST-VERDICT: other wrong test verdicts (broken/platform missed, ...)", _n("TEST-VERDICT")),
    (
        "dly-md",
        "detection delay, h from the first failure after onset to the verdict (median)",
        lambda s: statistics.median(s.delays) if s.delays else None,
    ),
    ("dly-mx", "detection delay (max)", lambda s: max(s.delays) if s.delays else None),
    ("o-mis", "MISSED-OUTAGE", _n("MISSED-OUTAGE")),
    ("o-fls", "FALSE-OUTAGE", _n("FALSE-OUTAGE")),
    ("feed", "STALE-ANALYSIS + FEED-PROBLEM", _n("STALE-ANALYSIS", "FEED-PROBLEM")),
]


def _fmt(x: Cell) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 or abs(x) >= 10 else f"{x:.1f}"


def render(scores: list[Score]) -> str:
    rows: list[list[str]] = [["sim seed", *(h for h, _, _ in COLUMNS)]]
    by_sim: dict[str, list[Score]] = {}
    for s in sorted(scores, key=lambda s: (s.sim, int(s.seed) if s.seed.isdigit() else 0, s.seed)):
        by_sim.setdefault(s.sim, []).append(s)
    for sim, group in by_sim.items():
        rows.extend([f"{s.sim} {s.seed}", *(_fmt(f(s)) for _, _, f in COLUMNS)] for s in group)
        if len(group) > 1:
            rows.append([f"{sim} spread", *(_spread([f(s) for s in group]) for _, _, f in COLUMNS)])
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    out = [
        " ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in rows
    ]
    out.append("")
    out.append("spread rows: min/median/max over seeds. Columns:")
    out.extend(f"  {h:7} {d}" for h, d, _ in COLUMNS)
    return "\n".join(out)


def _spread(xs: list[Cell]) -> str:
    vals = [x for x in xs if x is not None]
    if not vals:
        return "-"
    return "/".join(_fmt(x) for x in (min(vals), statistics.median(vals), max(vals)))
