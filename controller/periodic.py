"""A pass every few seconds on a daemon thread: the shape every controller loop shares (the leader
lease, analysis, remediation, provider polling, retention).

A pass that raises is logged and the next one retries: a loop must outlive one bad pass. Exceptions
listed as `expected` (a lost lease, say) are logged as a warning without a traceback.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Periodic:
    def __init__(
        self, name: str, work: Callable[[], object], expected: tuple[type[Exception], ...] = ()
    ) -> None:
        self.name = name
        self._work = work
        self._expected = expected
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, interval_s: float) -> None:
        """Begin; an interval of 0 (or less) leaves the loop off."""
        if interval_s <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, args=(interval_s,), name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def stopping(self) -> bool:
        return self._stop.is_set()

    def pause(self, seconds: float) -> None:
        """Sleep inside a pass, waking at once when the loop is stopped."""
        self._stop.wait(seconds)

    def _loop(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            try:
                self._work()
            except self._expected as error:
                log.warning("%s pass stopped: %s", self.name, error)
            except Exception:
                log.exception("%s pass failed; the next one retries", self.name)
