"""Event times on the wire and in the store.

Times travel as RFC 3339 (or epoch seconds on input) and are stored as integer epoch milliseconds,
which sort, compare and bin cheaply on both SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime


def to_ms(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return round(value.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return from_ms(ms).isoformat().replace("+00:00", "Z")
