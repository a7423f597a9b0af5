"""Event times on the wire and in the store.

Times travel as RFC 3339 (or epoch seconds on input) and are stored as integer epoch milliseconds,
which sort, compare and bin cheaply on both SQLite and PostgreSQL. `EventTime` is the one place an
incoming time is judged: every record a sender can store (results, JUnit, reports, webhook jobs)
carries one, so a time the store cannot hold or the analysis must not see is refused at the edge.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, Field

# Nothing this tool judges ran before 2000; older times are a zeroed or unset clock (0001-01-01, the
# epoch), and the oldest of them do not even survive conversion to UTC (year 0).
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
# How far ahead of the controller's clock a time may be. A runner whose clock runs ahead is one of the
# things this tool exists to find, so its results and readings must still arrive: a day's room for
# them, none for a date no clock could hold. (Nor do their times move the analysis' `as_of`: see
# controller.analysis.engine.latest_shared_ms and the service's clock lead.)
MAX_AHEAD_S = 86_400.0
# Epoch seconds at or above this (year 2286) would be read by pydantic as milliseconds: a guess we
# refuse to make, since every time it would accept from there is refused by MAX_AHEAD_S anyway.
_MILLISECONDS_FROM = 10_000_000_000
_NUMBER = re.compile(r"\s*[+-]?\d+(?:\.\d*)?\s*")


def to_ms(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return round(value.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def iso(ms: int | None) -> str | None:
    """RFC 3339 in UTC; None for no time, and for one no datetime can hold: a row stored before event
    times were bounded (year 0, year 10000) must not make every read that shows it fail."""
    if ms is None:
        return None
    try:
        return from_ms(ms).isoformat().replace("+00:00", "Z")
    except (ValueError, OverflowError, OSError):
        return None


def seconds_not_milliseconds(value: object) -> object:
    """Refuse an epoch number that is plainly milliseconds, instead of reading it as such silently."""
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if not (numeric or (isinstance(value, str) and _NUMBER.fullmatch(value))):
        return value
    number = float(value)  # type: ignore[arg-type]
    if abs(number) >= _MILLISECONDS_FROM:
        raise ValueError(
            f"{value} looks like epoch milliseconds; send epoch seconds ({number / 1000:.0f}) or RFC 3339"
        )
    return value


def within_bounds(value: datetime) -> datetime:
    # Compared before any arithmetic: converting year 1 (or 9999) with its offset overflows.
    if value < EARLIEST:
        raise ValueError(f"{value.isoformat()} is before 2000-01-01T00:00:00Z, the earliest time accepted")
    ahead = value.timestamp() - time.time()
    if ahead > MAX_AHEAD_S:
        raise ValueError(
            f"{value.isoformat()} is {ahead:.0f} s ahead of the controller's clock (at most "
            f"{MAX_AHEAD_S:.0f} s accepted): check the sender's clock, and that the time carries its UTC offset"
        )
    return value


# An event time a sender may store: RFC 3339 with an offset, or epoch seconds, in [EARLIEST, now + 1 day].
EventTime = Annotated[
    AwareDatetime,
    BeforeValidator(seconds_not_milliseconds),
    AfterValidator(within_bounds),
    Field(
        description="RFC 3339 or epoch seconds, from 2000-01-01T00:00:00Z to one day ahead of the controller's clock"
    ),
]
