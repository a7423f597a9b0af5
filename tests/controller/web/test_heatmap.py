"""The heat map's counts: bins, colour levels, host rows for ephemeral runners, outage and incident marks."""

from __future__ import annotations

import pytest

from controller.analysis.frame import Frame
from controller.web.format import parse_ms as ms
from controller.web.heatmap import bin_minutes_for, build, level_of

HOUR = 3_600_000
DAY0 = ms("2026-09-21T00:00:00Z", 0)


@pytest.mark.parametrize(
    ("executions", "failures", "level"),
    [(0, 0, -1), (10, 0, 0), (100, 1, 1), (100, 2, 2), (100, 7, 3), (10, 1, 4), (10, 3, 5), (10, 4, 6)],
    ids=["nothing-ran", "clean", "1%", "2%", "7%", "10%", "30%", "40%"],
)
def test_levels_are_fixed_rates(executions: int, failures: int, level: int) -> None:
    assert level_of(executions, failures) == level


@pytest.mark.parametrize(
    ("span_h", "minutes"),
    [(1, 5), (6, 5), (7, 10), (48, 60), (72, 60), (73, 120), (24 * 365, 1440)],
    ids=["1h", "6h", "7h", "2d", "3d", "3d+1h", "a-year"],
)
def test_bins_fit_the_history_into_the_columns(span_h: int, minutes: int) -> None:
    assert bin_minutes_for(span_h * HOUR, 72) == minutes


def _frame(rows: list[tuple[float, str, str, str, bool, bool]]) -> Frame:
    """Rows as (hour, runner, machine, pool, ephemeral, failed)."""
    results = []
    for i, (h, runner, machine, pool, eph, failed) in enumerate(rows, start=1):
        outcome = "failed" if failed else "passed"
        when = DAY0 + int(h * HOUR)
        results.append(
            (i, when, outcome, eph, f"t{i % 3}", runner, machine, pool, "img", "0", f"j{i}", "r1", "c1")
        )
    frame = Frame()
    frame.append_results(results)
    return frame.canonical()


def test_rows_columns_and_marks() -> None:
    rows = [(h + 0.5, "a-1", "vm-1", "a", False, h == 2 and k == 0) for h in range(3) for k in range(4)]
    rows += [(h + 0.5, "b-1", "vm-2", "b", False, False) for h in range(3)]
    rows += [(h + 0.5, f"eph-{h}", "host-9", "k8s", True, h == 1) for h in range(3)]
    frame = _frame(rows)
    as_of = DAY0 + int(2.5 * HOUR)
    heat = build(
        frame,
        as_of,
        outages=[(DAY0 + HOUR + 10 * 60_000, DAY0 + HOUR + 20 * 60_000)],
        incidents=[("a-1", DAY0 + 2 * HOUR, as_of + 1)],
    )

    assert heat.bin_minutes == 5
    assert heat.columns[0].start_ms == DAY0 + HOUR // 2  # the first execution's bin
    assert heat.columns[-1].start_ms <= as_of < heat.columns[-1].end_ms
    assert [(r.pool, r.key, r.host) for r in heat.rows] == [
        ("a", "a-1", False),
        ("b", "b-1", False),
        ("k8s", "host-9", True),
    ]
    a, b, host = heat.rows
    assert sum(c.executions for c in a.cells) == 12 and sum(c.failures for c in a.cells) == 1
    assert a.hottest == 5  # 1 of 4 in its last bin
    assert b.hottest == 0
    # Ephemeral runner ids are single-use: their host is the row, holding all three.
    assert sum(c.executions for c in host.cells) == 3 and host.hottest == 6
    outage_cols = [c.start_ms for c in heat.columns if c.outage]
    assert outage_cols == [DAY0 + HOUR + 10 * 60_000, DAY0 + HOUR + 15 * 60_000]
    marked = [heat.columns[j].start_ms for j, c in enumerate(a.cells) if c.incident]
    assert marked[0] == DAY0 + 2 * HOUR and marked[-1] == heat.columns[-1].start_ms
    assert not any(c.incident for c in b.cells)


def test_ticks_sit_on_round_times() -> None:
    frame = _frame([(h, "a-1", "vm-1", "a", False, False) for h in (0.2, 47.9)])
    heat = build(frame, DAY0 + int(47.9 * HOUR), outages=[], incidents=[])
    assert heat.bin_minutes == 60
    assert sum(span for span, _ in heat.ticks) == len(heat.columns) == 48
    labels = [label for _, label in heat.ticks]
    assert labels == ["09-21", "06:00", "12:00", "18:00", "09-22", "06:00", "12:00", "18:00"]


def test_an_empty_frame_gives_an_empty_map() -> None:
    heat = build(Frame(), DAY0, outages=[], incidents=[])
    assert heat.rows == [] and heat.columns == [] and heat.ticks == []
