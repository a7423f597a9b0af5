from __future__ import annotations

from typing import Any

import pytest

from runnerctl.times import shown_time


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("2026-09-22T19:48:42.762000Z", "2026-09-22T19:48:42Z"),
        ("2026-09-22T19:40:53Z", "2026-09-22T19:40:53Z"),
        ("2026-09-22T19:48:42.999999Z", "2026-09-22T19:48:42Z"),
        ("2026-09-22T21:48:42.5+02:00", "2026-09-22T19:48:42Z"),
        ("2026-09-22T19:48:42", "2026-09-22T19:48:42"),
        ("linux-03", "linux-03"),
        (None, None),
        (3, 3),
    ],
    ids=[
        "microseconds",
        "whole-seconds",
        "cut-not-rounded",
        "offset-to-utc",
        "naive-as-given",
        "not-a-time",
        "none",
        "number",
    ],
)
def test_times_show_to_the_whole_second_in_utc(given: Any, shown: Any) -> None:
    assert shown_time(given) == shown
