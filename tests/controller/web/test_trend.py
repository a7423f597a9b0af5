"""The fleet page's failure-rate trend: one step per bin at its rate's height, gaps where nothing ran."""

from __future__ import annotations

import re

import pytest

from controller.web.heatmap import Cell, HeatRow, level_of
from controller.web.trend import CEILING, HEIGHT, PAD, WIDTH, trend_of, y_of

BOTTOM = HEIGHT - PAD


def _row(counts: list[tuple[int, int]], key: str = "linux-03") -> HeatRow:
    cells = [Cell(e, f, level_of(e, f), False) for e, f in counts]
    return HeatRow(key=key, pool="linux", host=False, cells=cells)


def _starts(n: int) -> list[int]:
    return [1_790_000_000_000 + i * 3_600_000 for i in range(n)]


@pytest.mark.parametrize(
    ("rate", "y"),
    [(0.0, BOTTOM), (CEILING, PAD), (CEILING / 2, (PAD + BOTTOM) / 2), (0.9, PAD)],
    ids=["zero-at-the-bottom", "ceiling-at-the-top", "linear-between", "above-the-ceiling-clipped"],
)
def test_height_is_a_fixed_linear_scale(rate: float, y: float) -> None:
    assert y_of(rate) == pytest.approx(y)


def test_each_bin_that_ran_is_a_step_at_its_rate_and_empty_bins_are_gaps() -> None:
    counts = [(10, 0), (0, 0), (0, 0), (20, 2), (10, 4), (0, 0), (5, 1), (40, 0)]
    trend = trend_of(_row(counts), _starts(len(counts)))
    width = WIDTH / len(counts)
    ran = [(j, f / e) for j, (e, f) in enumerate(counts) if e]
    assert [(s.x0, s.x1, s.y) for s in trend.steps] == [
        (pytest.approx(j * width), pytest.approx((j + 1) * width), y_of(rate)) for j, rate in ran
    ]
    # Three runs of adjacent bins, three pieces of line: a gap never reads as a rate of zero.
    assert len(re.findall(r"M", trend.path)) == 3
    assert trend.latest == 0.0


def test_the_same_rate_is_the_same_height_on_every_row() -> None:
    busy = trend_of(_row([(400, 40)], "linux-01"), _starts(1))
    quiet = trend_of(_row([(10, 1)], "linux-02"), _starts(1))
    assert busy.steps[0].y == quiet.steps[0].y == y_of(0.10)


def test_the_hover_names_the_worst_and_newest_bins() -> None:
    counts = [(10, 0), (10, 5), (0, 0)]
    trend = trend_of(_row(counts), _starts(3))
    assert trend.latest is None
    assert "highest 50.0% at" in trend.title and trend.title.endswith("newest bin ran nothing")


def test_a_row_where_nothing_ran_has_no_line() -> None:
    trend = trend_of(_row([(0, 0)] * 4), _starts(4))
    assert trend.steps == [] and trend.path == ""
    assert trend.title == "linux-03: nothing ran in the window"
