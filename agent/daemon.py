"""The running agent: identity, spool, sender and schedule wired together, and a clean stop."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from agent import __version__, checks, identity, schedule
from agent.checks.base import CheckConfig
from agent.directives import Directives
from agent.runner import run_check
from agent.sender import Sender
from agent.settings import AgentSettings
from agent.spool import Spool
from common.identity import RunnerIdentity
from common.reports import AgentReport

log = logging.getLogger(__name__)


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
        return trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to do
        return None


_malloc_trim = _load_malloc_trim()


def _release_free_memory() -> None:
    """Hand freed heap back to the OS after a check: a cache pass over 20k files allocates a manifest
    that is garbage a moment later, and glibc would otherwise keep those pages resident."""
    if _malloc_trim is not None:
        _malloc_trim(0)


def boot_id(path: Path) -> str:
    try:
        return path.read_text().strip() or "unknown-boot"
    except OSError:
        return "unknown-boot"


class Agent:
    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        self.runner: RunnerIdentity = identity.resolve(settings.identity)
        self.agent_id = settings.agent_id or self.runner.id
        self.boot_id = boot_id(settings.boot_id_file)
        self.stop_event = threading.Event()
        self.spool = Spool(settings.state_dir, settings.spool)
        token = settings.token.get_secret_value() if settings.token else None
        self.directives = Directives(self.runner.id, settings.directives, settings.state_dir)
        self.sender = Sender(
            settings.server,
            token,
            self.spool,
            settings.sender,
            stop=self.stop_event,
            on_answer=self.directives.handle,
        )
        jobs = [(module, settings.check_config(module.NAME)) for module in checks.CHECKS]
        self.scheduler = schedule.build(jobs, self.run_one, speedup=settings.speedup, first_run_spread_s=1.0)

    def run_one(self, module: ModuleType, config: CheckConfig) -> None:
        """One scheduled run: read, spool, nudge the sender. Spooling first is what makes a crash harmless."""
        if self.stop_event.is_set():
            return
        outcome = run_check(module, config, stop=self.stop_event)
        if self.stop_event.is_set():
            return  # stopping: a reading cut short is not worth a report
        observed = datetime.now(UTC)
        waiting = 0

        def build(seq: int, dropped: int) -> AgentReport:
            return AgentReport(
                agent_id=self.agent_id,
                boot_id=self.boot_id,
                seq=seq,
                observed_at=observed,
                runner=self.runner,
                readings=[outcome.reading],
                dropped=dropped,
                spool_depth=waiting,
                agent_version=__version__,
            )

        try:
            waiting = self.spool.stats()["reports"]  # what the controller has not acknowledged yet
            report = self.spool.append(self.agent_id, self.boot_id, build)
        except Exception:
            log.exception("spool: cannot store the %s reading", module.NAME)
            return
        if report is not None:
            log.debug(
                "check %s: %s in %.3f s, seq %d",
                module.NAME,
                outcome.reading.status,
                outcome.duration_s,
                report.seq,
            )
        self.sender.wake.set()
        _release_free_memory()

    def run(self) -> None:
        """Block until `stop()`; the sender runs on this thread so a stop finishes the current send."""
        log.info(
            "runner-agent %s: runner %s, agent %s, sending to %s",
            __version__,
            self.runner.id,
            self.agent_id,
            self.settings.server,
        )
        self.scheduler.start()
        try:
            self.sender.run()
        finally:
            self.scheduler.shutdown(wait=False)
            self.sender.close()
            self.spool.close()
            log.info("runner-agent stopped")

    def stop(self) -> None:
        self.stop_event.set()
        self.sender.wake.set()
