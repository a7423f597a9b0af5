from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from agent.checks.base import CheckConfig
from agent.runner import run_check
from common.readings import DiskReading, Status

# Long enough that a runner which waited for a hung check could not pass for one that timed it out.
HANG_S = 20


def module(name: str, collect: object) -> SimpleNamespace:
    return SimpleNamespace(NAME=name, collect=collect)


def test_exception_becomes_unknown() -> None:
    def boom(config: CheckConfig) -> DiskReading:
        raise RuntimeError("statvfs exploded")

    outcome = run_check(module("disk", boom), CheckConfig())  # type: ignore[arg-type]

    assert (outcome.reading.status, outcome.reading.reason) == (Status.unknown, "CheckFailed")
    assert "statvfs exploded" in (outcome.reading.message or "")


def test_hung_check_times_out_and_is_not_stacked() -> None:
    release = threading.Event()

    def hang(config: CheckConfig) -> DiskReading:
        release.wait(HANG_S)
        return DiskReading()

    mod = module("disk", hang)
    started = time.monotonic()
    first = run_check(mod, CheckConfig(timeout_s=0.2))  # type: ignore[arg-type]
    second = run_check(mod, CheckConfig(timeout_s=0.2))  # type: ignore[arg-type]
    release.set()
    time.sleep(0.1)
    third = run_check(mod, CheckConfig(timeout_s=1))  # type: ignore[arg-type]

    assert time.monotonic() - started < HANG_S / 2, "the runner waited for the hung check"
    assert (first.reading.status, first.reading.reason) == (Status.unknown, "CheckTimeout")
    assert second.reading.reason == "CheckStillRunning"
    assert third.reading.status is Status.ok


def test_wrong_return_type_is_unknown() -> None:
    outcome = run_check(module("memory", lambda config: DiskReading()), CheckConfig())  # type: ignore[arg-type]

    assert outcome.reading.reason == "CheckFailed" and outcome.reading.check == "memory"


def test_stopping_agent_is_not_held_by_a_long_check() -> None:
    release = threading.Event()
    stop = threading.Event()

    def long_pass(config: CheckConfig) -> DiskReading:
        release.wait(HANG_S)
        return DiskReading()

    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    outcome = run_check(module("cache", long_pass), CheckConfig(timeout_s=3600), stop=stop)  # type: ignore[arg-type]
    release.set()
    time.sleep(0.1)

    assert time.monotonic() - started < HANG_S / 2, "stopping waited for the long check"
    assert outcome.reading.reason == "AgentStopping"
