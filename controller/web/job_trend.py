"""Each runner's job failure rate per time bin, for the fleet page: the same rows and the same step line
as the test-result trend (trend.py), counted over the jobs table instead of the analysed results.

The bins are the heat map's, so both trends of a row line up; a fleet with job records but no test
result yet (every job dying before its tests) gets bins of its own over the jobs' span.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Connection

from common.jobs import JUDGED_CONCLUSIONS, JobConclusion
from controller.db import tables
from controller.web.heatmap import MINUTE_MS, Cell, HeatMap, HeatRow, bins, level_of

_JUDGED = sorted(c.value for c in JUDGED_CONCLUSIONS)


@dataclass(frozen=True)
class JobBins:
    starts_ms: list[int]
    width_ms: int
    rows: dict[str, HeatRow]  # by heat-map row key: runner id, or host of ephemeral runners


def job_bins(conn: Connection, heat: HeatMap, since_ms: int, as_of_ms: int) -> JobBins:
    t = tables.jobs
    if heat.columns:
        starts = [c.start_ms for c in heat.columns]
        width = heat.bin_minutes * MINUTE_MS
    else:
        first = conn.execute(
            select(t.c.finished_ms).where(t.c.finished_ms >= since_ms).order_by(t.c.finished_ms).limit(1)
        ).scalar_one_or_none()
        if first is None:
            return JobBins([], 0, {})
        minutes, start, end = bins(int(first), max(as_of_ms, int(first)))
        width = minutes * MINUTE_MS
        starts = list(range(start, end, width))
    end = starts[-1] + width
    found = conn.execute(
        select(t.c.runner_id, t.c.machine, t.c.ephemeral, t.c.finished_ms, t.c.conclusion).where(
            t.c.finished_ms >= starts[0], t.c.finished_ms < end, t.c.conclusion.in_(_JUDGED)
        )
    )
    counts: dict[tuple[str, bool], list[list[int]]] = {}
    for runner_id, machine, ephemeral, finished_ms, conclusion in found:
        key = (machine if ephemeral else runner_id, bool(ephemeral))
        cells = counts.setdefault(key, [[0, 0] for _ in starts])
        column = (finished_ms - starts[0]) // width
        cells[column][0] += 1
        cells[column][1] += conclusion != JobConclusion.success.value
    rows = {
        key: HeatRow(key=key, pool="", host=host, cells=[Cell(n, f, level_of(n, f), False) for n, f in cells])
        for (key, host), cells in counts.items()
    }
    return JobBins(starts, width, rows)
