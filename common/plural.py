"""Counts in sentences: `1 runner`, `2 runners`, never `1 runners` or `2 runner(s)`.

One helper for every program, so that a message written next year agrees with its number too. A noun
whose plural is not the singular plus "s" passes its own (`counted(n, "entry", "entries")`).
"""

from __future__ import annotations


def noun(count: float, singular: str, plural: str | None = None) -> str:
    """The noun alone, for a count formatted elsewhere (`f"{n:,} {noun(n, 'result')}"`)."""
    return singular if count == 1 else plural or singular + "s"


def counted(count: float, singular: str, plural: str | None = None) -> str:
    """`counted(1, "runner")` → `1 runner`; `counted(0, "runner")` → `0 runners`."""
    return f"{count} {noun(count, singular, plural)}"
