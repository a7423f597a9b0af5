"""Runs one check safely: on its own thread, with a timeout and timing, every failure turned into an
`unknown` reading, so a broken or hung check never takes the agent down (node_exporter's habit)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from agent.checks.base import CheckConfig
from common.readings import CacheReading, ClockReading, DiskReading, MemoryReading, Status

log = logging.getLogger(__name__)

AnyReading = DiskReading | MemoryReading | ClockReading | CacheReading

_READING_TYPES: dict[str, type[AnyReading]] = {
    "cache": CacheReading,
    "clock": ClockReading,
    "disk": DiskReading,
    "memory": MemoryReading,
}


@dataclass(frozen=True)
class Outcome:
    name: str
    reading: AnyReading
    duration_s: float


# Checks whose previous collect is still running (hung on NFS, say): a thread cannot be killed, so
# rather than pile up stuck threads we skip the check until the old one returns.
_in_flight: set[str] = set()
_in_flight_lock = threading.Lock()


def run_check(module: ModuleType, config: CheckConfig, stop: threading.Event | None = None) -> Outcome:
    """Run `module.collect(config)`; when `stop` is set the wait ends at once, so a stopping agent is
    never held up by a long cache pass (the check's daemon thread is simply abandoned)."""
    name: str = module.NAME
    started = time.monotonic()
    with _in_flight_lock:
        if name in _in_flight:
            return Outcome(name, unknown(name, "CheckStillRunning", "the previous run has not returned"), 0.0)
        _in_flight.add(name)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["reading"] = module.collect(config)
        except Exception as exc:  # a check's bug must become a reading, never a dead agent
            log.exception("check %s failed", name)
            box["reading"] = unknown(name, "CheckFailed", f"{type(exc).__name__}: {exc}")
        finally:
            with _in_flight_lock:
                _in_flight.discard(name)

    # A fresh daemon thread per run: a hung check cannot block shutdown, and priority changes a check
    # makes to its own thread (the cache check's nice/ionice) die with it.
    thread = threading.Thread(target=target, name=f"check-{name}", daemon=True)
    thread.start()
    deadline = started + config.timeout_s
    while thread.is_alive() and (stop is None or not stop.is_set()):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        thread.join(min(remaining, 0.2) if stop is not None else remaining)
    duration = time.monotonic() - started
    if thread.is_alive() and stop is not None and stop.is_set():
        return Outcome(
            name, unknown(name, "AgentStopping", "the agent stopped before the check returned"), duration
        )
    if thread.is_alive():
        log.warning("check %s timed out after %.1f s", name, config.timeout_s)
        return Outcome(
            name, unknown(name, "CheckTimeout", f"no answer within {config.timeout_s:g} s"), duration
        )
    reading = box.get("reading")
    if not isinstance(reading, _READING_TYPES[name]):
        return Outcome(name, unknown(name, "CheckFailed", f"returned {type(reading).__name__}"), duration)
    return Outcome(name, reading, duration)


def unknown(name: str, reason: str, message: str) -> AnyReading:
    return _READING_TYPES[name](status=Status.unknown, reason=reason, message=message[:2000])
