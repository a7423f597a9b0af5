"""The stored job records as columns, grown incrementally by row id like the results (frame.py).

Strings stay strings here: there are far fewer jobs than results, and the job term (jobs.py) orders
them itself, so a backfill and live traffic read the very same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.engine import Connection

from controller.db import tables

# Column name -> (numpy dtype, fill for None). Times in ms; -1 where unknown (tests: not reported).
_INTS = {"finished_ms": -1, "started_ms": -1, "tests": -1, "attempt": -1}
_STRINGS = (
    "job_id",
    "run_id",
    "name",
    "conclusion",
    "failed_step",
    "failure_reason",
    "runner",
    "machine",
    "pool",
)
_SELECT = (
    ("finished_ms", tables.jobs.c.finished_ms),
    ("started_ms", tables.jobs.c.started_ms),
    ("tests", tables.jobs.c.tests),
    ("attempt", tables.jobs.c.attempt),
    ("job_id", tables.jobs.c.job_id),
    ("run_id", tables.jobs.c.run_id),
    ("name", tables.jobs.c.name),
    ("conclusion", tables.jobs.c.conclusion),
    ("failed_step", tables.jobs.c.failed_step),
    ("failure_reason", tables.jobs.c.failure_reason),
    ("runner", tables.jobs.c.runner_id),
    ("machine", tables.jobs.c.machine),
    ("pool", tables.jobs.c.pool),
    ("ephemeral", tables.jobs.c.ephemeral),
)
COLUMNS = tuple(name for name, _ in _SELECT)


def _empty() -> dict[str, np.ndarray]:
    out = {name: np.zeros(0, np.int64) for name in _INTS}
    out |= {name: np.zeros(0, "U1") for name in _STRINGS}
    out["ephemeral"] = np.zeros(0, bool)
    return out


@dataclass
class JobRows:
    """One row per stored job attempt: `cols[name]` for each of COLUMNS."""

    cols: dict[str, np.ndarray] = field(default_factory=_empty)
    last_job_id: int = 0

    @property
    def size(self) -> int:
        return int(self.cols["finished_ms"].size)

    def append(self, rows: Sequence[Sequence[Any]]) -> None:
        """Rows as tuples in COLUMNS order."""
        if not rows:
            return
        for offset, name in enumerate(COLUMNS):
            values = [row[offset] for row in rows]
            if name in _INTS:
                fill = _INTS[name]
                new = np.array([fill if v is None else int(v) for v in values], np.int64)
            elif name == "ephemeral":
                new = np.array([bool(v) for v in values], bool)
            else:
                new = np.array(["" if v is None else str(v) for v in values])
            self.cols[name] = np.concatenate([self.cols[name], new])

    def kept(self, keep: np.ndarray) -> JobRows:
        if keep.all():
            return self
        return JobRows(cols={k: v[keep] for k, v in self.cols.items()}, last_job_id=self.last_job_id)

    def load(self, conn: Connection, batch: int = 100_000) -> int:
        """Read job rows stored since the last load; returns how many were added."""
        added = 0
        while True:
            query = (
                select(tables.jobs.c.id, *(column for _, column in _SELECT))
                .where(tables.jobs.c.id > self.last_job_id)
                .order_by(tables.jobs.c.id)
                .limit(batch)
            )
            rows = [tuple(r) for r in conn.execute(query)]
            if not rows:
                return added
            self.last_job_id = int(rows[-1][0])
            self.append([r[1:] for r in rows])
            added += len(rows)
            if len(rows) < batch:
                return added
