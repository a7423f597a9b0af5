"""The polling loop for providers that push nothing (Jenkins): ask each `Poller` what finished since its
cursor, store the results, job records and the new cursor in one transaction, and settle the reruns they are.

A failed poll keeps the old cursor, so the next pass asks again; results are deduplicated on storage,
so asking twice stores nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from controller.ingest import jobs
from controller.ingest.service import Ingest
from controller.periodic import Periodic
from controller.providers.base import Poller

log = logging.getLogger(__name__)


class Polling:
    def __init__(
        self,
        ingest: Ingest,
        pollers: dict[str, Poller],
        settle: Callable[[str, str], str | None],
        leads: Callable[[], bool] = lambda: True,
    ) -> None:
        self.ingest = ingest
        self.leads = leads  # one replica polls: two would race for the same cursor
        self.pollers = pollers
        self.settle = settle  # the remediator's `pushed`: a finished rerun settles at once
        self._periodic = Periodic("polling", self.tick)

    def start(self, interval_s: float) -> None:
        if self.pollers:
            self._periodic.start(interval_s)

    def stop(self) -> None:
        self._periodic.stop()

    def tick(self) -> None:
        if not self.leads():
            return
        for name, poller in sorted(self.pollers.items()):
            try:
                self.poll_one(name, poller)
            except Exception:  # one provider down must not stop the others, nor the loop
                log.exception("polling %s failed; its cursor is kept and the next pass asks again", name)

    def poll_one(self, name: str, poller: Poller) -> int:
        """One poll of one provider; returns how many results were new."""
        cursor = self.ingest.poll_cursor(name)
        events, after = poller.poll(cursor)
        stored = self.ingest.polled(name, after, jobs.results_of(name, events), jobs.records_of(name, events))
        for event in events:
            if event.state not in ("passed", "failed"):
                continue
            for job_id in (event.job.id, *event.rerun_ids):
                if self.settle(job_id, event.state):
                    break
        return stored.new
