"""How a runner the disruption budget holds back reads in `get runners` and `describe runner`."""

from __future__ import annotations

from typing import Any

import pytest

from runnerctl.holds import cordoned, held_line

HELD = {"reason": "budget", "incident": "inc-w4", "summary": "budget 1 of 1 in use", "place": 2, "queued": 3}


@pytest.mark.parametrize(
    ("runner", "shown"),
    [
        ({"cordon": {"by": "alice"}, "probation": None, "held": None}, "yes"),
        ({"cordon": None, "probation": {"state": "running"}, "held": None}, "probation"),
        ({"cordon": None, "probation": None, "held": HELD}, "held"),
        ({"cordon": None, "probation": None, "held": None}, "no"),
        ({}, "no"),  # an older controller sends no `held`
    ],
    ids=["cordoned", "probation", "held", "in-rotation", "older-controller"],
)
def test_cordoned_column(runner: dict[str, Any], shown: str) -> None:
    assert cordoned(runner) == shown


@pytest.mark.parametrize(
    ("place", "queued", "words"),
    [
        (1, 1, "1st of 1"),
        (2, 3, "2nd of 3"),
        (3, 3, "3rd of 3"),
        (11, 12, "11th of 12"),
        (22, 22, "22nd of 22"),
    ],
)
def test_held_line_says_why_and_where_in_the_queue(place: int, queued: int, words: str) -> None:
    line = held_line(HELD | {"place": place, "queued": queued})
    assert line == f"held: budget 1 of 1 in use; {words} queued for a cordon (inc-w4)"
