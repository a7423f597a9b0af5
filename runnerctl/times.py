"""Times as operators read them: RFC 3339 UTC to the whole second, the same precision on every line;
durations as `3m18s`.

The API sends what it stores (epoch ms, so `19:48:42.762000Z` beside `19:40:53Z` when the ms are zero);
tables, `describe` and `explain` show both as `…:42Z` and `…:53Z`. JSON and YAML keep the API's text.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from common.durations import short_duration


def shown_time(value: Any) -> Any:
    """An RFC 3339 time cut to whole seconds (cut, not rounded: a time never shows later than it was);
    anything else, `None` included, as given."""
    if not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if moment.tzinfo is None:
        return value
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def shown_duration(seconds: Any) -> Any:
    """A duration in seconds as `45s`, `3m18s`, `2h05m` (common/durations.py); anything else as given."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        return seconds
    return short_duration(seconds)
