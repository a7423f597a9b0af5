"""How a runner the disruption budget holds back reads: sick, and the controller would cordon it, but
the pool's budget is in use. `get runners`, `describe runner` and `status` all say it the same way."""

from __future__ import annotations

from typing import Any


def cordoned(runner: dict[str, Any]) -> str:
    """The CORDONED column: yes, probation, held (queued for the budget) or no."""
    if runner.get("cordon"):
        return "yes"
    if runner.get("probation"):
        return "probation"
    return "held" if runner.get("held") else "no"


def held_line(held: dict[str, Any]) -> str:
    """`held: budget 1 of 1 in use; 1st of 2 queued for a cordon (inc-…)`."""
    return (
        f"held: {held['summary']}; {_ordinal(held['place'])} of {held['queued']} queued for a cordon "
        f"({held['incident']})"
    )


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
