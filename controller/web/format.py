"""Jinja filters: numbers and times as an operator reads them on the fleet page."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from common.durations import short_duration
from common.plural import counted, noun
from common.timeutil import from_ms, to_ms
from controller.remediation.actions import CONTROLLER


def parse_ms(value: str | None, default: int) -> int:
    """An RFC 3339 time from an analysis dict, as epoch ms (`default` when absent)."""
    if not value:
        return default
    return to_ms(datetime.fromisoformat(value.replace("Z", "+00:00")))


def pct(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "–"
    return f"{value * 100:.{digits}f}%"


def pvalue(value: float | None) -> str:
    if value is None:
        return "–"
    if value == 0:
        return "<1e-300"  # below what a double holds
    return f"{value:.2g}" if value >= 1e-3 else f"{value:.1e}"


def when(value: str | None) -> str:
    """An RFC 3339 time as `MM-DD HH:MM` UTC: dense, and every time on the page is UTC."""
    if not value:
        return "–"
    return from_ms(parse_ms(value, 0)).strftime("%m-%d %H:%M")


def ms_when(value: int) -> str:
    return from_ms(value).strftime("%m-%d %H:%M")


def reading(values: dict[str, float]) -> str:
    """A reading's numbers as the evidence step judged them, e.g. `free 0.33 GiB (0.2%), read-only`."""
    parts = []
    if "disk_free_bytes" in values or "disk_free_ratio" in values:
        free = f"free {values['disk_free_bytes'] / 2**30:.2f} GiB" if "disk_free_bytes" in values else "free"
        ratio = f" ({pct(values['disk_free_ratio'])})" if "disk_free_ratio" in values else ""
        parts.append(free + ratio)
    for name, label in (("inode_free_ratio", "inodes free"), ("mem_available_ratio", "memory available")):
        if name in values:
            parts.append(f"{label} {pct(values[name])}")
    for name, label in (
        ("psi_full_avg10", "PSI full"),
        ("psi_some_avg10", "PSI some"),
        ("oom_kills", "OOM kills"),
    ):
        if name in values:
            parts.append(f"{label} {values[name]:g}")
    if "clock_offset_s" in values:
        parts.append(f"clock offset {values['clock_offset_s']:+.3g} s")
    if "read_only" in values:
        parts.append("read-only" if values["read_only"] else "writable")
    return ", ".join(parts) or "–"


def mode(action: dict[str, Any]) -> tuple[str, str]:
    """The audit log's mode column as (text, why): the pool's mode an action ran under, or why it ran
    under none, so that a blank never leaves the operator guessing."""
    if action.get("mode"):
        return str(action["mode"]), f"ran under the pool's remediation mode {action['mode']}"
    if action.get("actor") not in (None, CONTROLLER):
        return (
            "operator",
            "asked for by a person: a pool's mode governs only what the controller does on its own",
        )
    if action.get("action") in ("rerun-result", "clear-flakes"):
        return (
            "none",
            "follows reruns an operator asked for (runnerctl drain --rerun), which no pool mode governs",
        )
    if action.get("action") == "fleet-incident":
        return "none", "fleet-wide: no single pool's mode applies"
    return "none", "the controller's bookkeeping in every mode (e.g. a cordon's expiry)"


def seconds(value: float) -> str:
    """A duration as runnerctl shows it too (`common/durations.py`)."""
    return short_duration(value)


FILTERS: dict[str, Callable[..., Any]] = {
    "counted": counted,
    "noun": noun,
    "mode": mode,
    "pct": pct,
    "pvalue": pvalue,
    "when": when,
    "ms_when": ms_when,
    "reading": reading,
    "seconds": seconds,
}
