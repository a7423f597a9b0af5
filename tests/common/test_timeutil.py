"""Event times shown to users: a row stored before times were bounded never breaks a read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from common.timeutil import iso, to_ms

CASES = [
    ("a time", to_ms(datetime(2026, 9, 21, 10, 0, tzinfo=UTC)), "2026-09-21T10:00:00Z"),
    ("no time", None, None),
    ("before year 1, stored by an older controller", -62_135_596_800_000 - 3_600_000, None),
    ("after year 9999", 253_402_300_800_000 + 1, None),
]


@pytest.mark.parametrize(("ms", "shown"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_iso_shows_what_a_datetime_can_hold_and_nothing_else(ms: int | None, shown: str | None) -> None:
    assert iso(ms) == shown
