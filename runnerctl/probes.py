"""How a probe before return reads in `describe runner` and `explain runner`."""

from __future__ import annotations

from typing import Any

from runnerctl.times import shown_time


def probe_line(probe: dict[str, Any] | None) -> str | None:
    """The newest probe before return: what it reran and, once judged, how it went."""
    if not probe:
        return None
    if probe.get("outcome"):
        return f"{probe['state']} (since {shown_time(probe['since'])}): {probe['outcome']}"
    return (
        f"{probe['state']} since {shown_time(probe['since'])}: job {probe['of']} rerun as "
        f"{probe.get('job') or '-'}, pinned to this runner, which stays cordoned to every other job"
    )
