"""A runner's failure-rate trend for the fleet page: its heat-map row drawn as a small step line, in SVG
made here, so the page needs no script and nothing from elsewhere.

One step per time bin, at the height of that bin's failure rate; bins where nothing ran leave a gap
(no runs is not zero failures, as on the heat map). The scale is fixed, not fitted to the row, so the
same height means the same rate on every row: linear from 0 at the bottom to `CEILING` and above at
the top, the rate of the heat map's darkest colour.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.web.format import ms_when, pct
from controller.web.heatmap import LEVEL_BOUNDS, HeatRow

WIDTH = 120  # px; the heat map's 72 bins at most, so a bin is at least 1.6 px wide
HEIGHT = 20
PAD = 2.0  # the line's half-width and then some: a rate of 0 or of CEILING is not cut off
CEILING = LEVEL_BOUNDS[-1]


@dataclass(frozen=True)
class Step:
    x0: float
    x1: float
    y: float


@dataclass(frozen=True)
class Trend:
    steps: list[Step]  # one per bin that ran something, oldest first
    path: str  # SVG path data: a horizontal step per bin, joined where bins are adjacent
    title: str  # what hovering the trend says
    latest: float | None  # the newest bin's failure rate, if anything ran in it
    width: int = WIDTH
    height: int = HEIGHT


def y_of(rate: float, height: int = HEIGHT) -> float:
    return round(PAD + (1 - min(rate, CEILING) / CEILING) * (height - 2 * PAD), 2)


def trend_of(
    row: HeatRow, starts_ms: list[int], width: int = WIDTH, height: int = HEIGHT, what: str = "failure rate"
) -> Trend:
    """`starts_ms`: each column's start, for the hover text; `what` the rate drawn (of tests, of jobs)."""
    n = len(row.cells)
    step = width / n if n else 0.0
    steps: list[Step] = []
    parts: list[str] = []
    joined = False
    for j, cell in enumerate(row.cells):
        if not cell.executions:
            joined = False
            continue
        x0, x1, y = round(j * step, 2), round((j + 1) * step, 2), y_of(cell.rate, height)
        parts.append(f"V{y}H{x1}" if joined else f"M{x0},{y}H{x1}")
        steps.append(Step(x0, x1, y))
        joined = True
    ran = [c for c in row.cells if c.executions]
    latest = row.cells[-1].rate if row.cells and row.cells[-1].executions else None
    if ran:
        worst = max(range(n), key=lambda j: (row.cells[j].rate, j))
        title = (
            f"{row.key}: {what} per bin, 0 at the bottom, {pct(CEILING, 0)} or more at the top; "
            f"highest {pct(row.cells[worst].rate)} at {ms_when(starts_ms[worst])}; newest bin "
            + (pct(latest) if latest is not None else "ran nothing")
        )
    else:
        title = f"{row.key}: nothing ran in the window"
    return Trend(steps=steps, path="".join(parts), title=title, latest=latest, width=width, height=height)
