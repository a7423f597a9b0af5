"""Failure rate per runner per time bin, for the fleet page's heat map.

A count over the analysis frame, nothing more: rows are persistent runners, or the host for ephemeral
ones (their ids are single-use, as in the analysis); columns are equal bins ending at `as_of`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from common.timeutil import from_ms
from controller.analysis.flake import entity_of
from controller.analysis.frame import Frame

MINUTE_MS = 60_000
NICE_BINS_MIN = (5, 10, 15, 30, 60, 120, 180, 360, 720, 1440)
# Upper bounds of the colour levels 1..6 (level 0: ran, none failed). Fixed rather than relative to the
# fleet, so a colour means the same rate on every page load; the steps are finer at the low end, where
# a healthy runner's noise sits, and coarse above, where a sick one is.
LEVEL_BOUNDS = (0.02, 0.05, 0.10, 0.20, 0.40)
TICK_MINUTES = (30, 60, 120, 180, 360, 720, 1440, 2880, 10080)
TICK_COLUMNS = 5  # a label needs about this many cells of width


@dataclass(frozen=True)
class Column:
    start_ms: int
    end_ms: int
    outage: bool


@dataclass(frozen=True)
class Cell:
    executions: int
    failures: int
    level: int  # -1: nothing ran; 0: no failures; 1..6: LEVEL_BOUNDS
    incident: bool  # inside an open incident's stretch on this row

    @property
    def rate(self) -> float:
        return self.failures / self.executions if self.executions else 0.0


@dataclass(frozen=True)
class HeatRow:
    key: str  # runner id, or host name for an ephemeral pool
    pool: str
    host: bool
    cells: list[Cell]

    @property
    def hottest(self) -> int:
        return max((c.level for c in self.cells), default=-1)


@dataclass(frozen=True)
class HeatMap:
    columns: list[Column]
    rows: list[HeatRow]
    bin_minutes: int

    @property
    def ticks(self) -> list[tuple[int, str]]:
        """(colspan, label) groups for the time axis, on round times at least TICK_COLUMNS apart: the
        date at midnight, the time of day otherwise; a leading partial group goes unlabelled."""
        step = next(
            (m for m in TICK_MINUTES if m % self.bin_minutes == 0 and m >= TICK_COLUMNS * self.bin_minutes),
            TICK_COLUMNS * self.bin_minutes,
        )
        step_ms = step * MINUTE_MS
        out: list[tuple[int, str]] = []
        i = 0
        while i < len(self.columns):
            start = self.columns[i].start_ms
            boundary = (start // step_ms + 1) * step_ms
            span = sum(1 for c in self.columns[i:] if c.start_ms < boundary)
            moment = from_ms(start)
            label = ""
            if start % step_ms == 0:
                label = moment.strftime("%m-%d" if moment.hour == moment.minute == 0 else "%H:%M")
            out.append((span, label))
            i += span
        return out


def level_of(executions: int, failures: int) -> int:
    if executions == 0:
        return -1
    if failures == 0:
        return 0
    rate = failures / executions
    return 1 + sum(rate >= bound for bound in LEVEL_BOUNDS)


def bin_minutes_for(span_ms: int, max_columns: int) -> int:
    return next((m for m in NICE_BINS_MIN if m * MINUTE_MS * max_columns >= span_ms), NICE_BINS_MIN[-1])


def bins(first_ms: int, as_of_ms: int, max_columns: int = 72) -> tuple[int, int, int]:
    """(bin minutes, first bin's start, last bin's end) for times from `first_ms` to `as_of_ms`: equal
    round bins ending just after `as_of`, at most `max_columns` of them."""
    minutes = bin_minutes_for(as_of_ms - first_ms + 1, max_columns)
    width = minutes * MINUTE_MS
    end = (as_of_ms // width + 1) * width
    return minutes, max(end - max_columns * width, (first_ms // width) * width), end


def build(
    frame: Frame,
    as_of_ms: int,
    outages: list[tuple[int, int]],
    incidents: list[tuple[str, int, int]],
    max_columns: int = 72,
) -> HeatMap:
    """`outages` as (start, end) ms; `incidents` as (row key, start, end) ms for the open stretches."""
    if frame.size == 0:
        return HeatMap(columns=[], rows=[], bin_minutes=60)
    minutes, start, end = bins(int(frame.time_ms.min()), as_of_ms, max_columns)
    width = minutes * MINUTE_MS
    n_cols = (end - start) // width
    columns = [
        Column(s, s + width, any(o_start < s + width and o_end > s for o_start, o_end in outages))
        for s in range(start, end, width)
    ]

    chosen = (frame.time_ms >= start) & (frame.time_ms < end)
    entity = entity_of(frame)[chosen]
    col = (frame.time_ms[chosen] - start) // width
    keys, row = np.unique(entity, return_inverse=True)
    flat = row * n_cols + col
    executions = np.bincount(flat, minlength=keys.size * n_cols).reshape(keys.size, n_cols)
    failures = np.bincount(flat, weights=frame.fail[chosen], minlength=keys.size * n_cols)
    failures = failures.reshape(keys.size, n_cols).astype(np.int64)
    pool_of = _pool_of(frame, np.flatnonzero(chosen), row)

    rows = []
    for i, code in enumerate(keys.tolist()):
        host = code <= -2
        name = frame.name("machine", -2 - code) if host else frame.name("runner", code)
        key = name or "?"
        stretches = [(s, e) for k, s, e in incidents if k == key]
        cells = [
            Cell(
                int(executions[i, j]),
                int(failures[i, j]),
                level_of(int(executions[i, j]), int(failures[i, j])),
                any(s < c.end_ms and e > c.start_ms for s, e in stretches),
            )
            for j, c in enumerate(columns)
        ]
        rows.append(HeatRow(key=key, pool=pool_of[i], host=host, cells=cells))
    rows.sort(key=lambda r: (r.pool, r.key))
    return HeatMap(columns=columns, rows=rows, bin_minutes=minutes)


def _pool_of(frame: Frame, rows: np.ndarray, row_of: np.ndarray) -> list[str]:
    """Each heat-map row's pool: that of its latest execution (a runner moved between pools shows where
    it is now)."""
    order = np.lexsort((frame.time_ms[rows], row_of))
    last = np.flatnonzero(np.append(row_of[order][1:] != row_of[order][:-1], True))
    return [frame.name("pool", int(frame.cols["pool"][rows[order[i]]])) or "<none>" for i in last.tolist()]
