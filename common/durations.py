"""Durations in words both the fleet page and runnerctl show: `45s`, `3m18s`, `2h05m`.

One helper for both programs, so the same job reads the same length wherever an operator looks.
"""

from __future__ import annotations


def short_duration(seconds: float) -> str:
    """Whole seconds, cut (not rounded): a job of 59.9 s is `59s`."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
