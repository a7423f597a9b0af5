"""Columnar, interned copies of the stored results and readings, grown incrementally by row id.

The analysis is vectorised over these arrays; strings become small integer codes once, at load.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any, cast

import numpy as np
from sqlalchemy import Select, select
from sqlalchemy.engine import Connection

from controller.analysis.jobrows import JobRows
from controller.db import tables

NONE = -1


@dataclass
class Codes:
    """Interned strings: code → value and value → code. Code -1 stands for None."""

    values: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    def code(self, value: str | None) -> int:
        if value is None:
            return NONE
        found = self.index.get(value)
        if found is None:
            found = self.index[value] = len(self.values)
            self.values.append(value)
        return found

    def name(self, code: int) -> str | None:
        return None if code < 0 else self.values[code]

    def codes_of(self, values: Iterable[str | None], count: int) -> np.ndarray:
        """The codes of many values at once: new ones interned first, then one C-level lookup each."""
        values = list(values)
        for value in set(values) - self.index.keys():
            if value is not None:
                self.code(value)
        lookup = cast(Callable[[str | None, int], int], self.index.get)  # None is never a key: NONE
        return np.fromiter(map(lookup, values, repeat(NONE)), np.int32, count)


RESULT_COLUMNS = ("test", "runner", "machine", "pool", "image", "shard", "job", "run", "commit")
READING_COLUMNS = (
    "disk_free_ratio",
    "disk_free_bytes",
    "inode_free_ratio",
    "read_only",
    "mem_available_ratio",
    "psi_full_avg10",
    "psi_some_avg10",
    "oom_kills",
    "clock_offset_s",
    "problem",
)


@dataclass
class Frame:
    """All executions (skipped results excluded) and all readings, as arrays."""

    codes: dict[str, Codes] = field(
        default_factory=lambda: {c: Codes() for c in (*RESULT_COLUMNS, "check", "cache_key", "digest")}
    )
    time_ms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    fail: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    ephemeral: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    cols: dict[str, np.ndarray] = field(
        default_factory=lambda: {c: np.zeros(0, np.int32) for c in RESULT_COLUMNS}
    )
    last_result_id: int = 0

    # Readings: one row per (report, check).
    r_time_ms: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    r_runner: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    r_machine: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    r_pool: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    r_image: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    r_check: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    r_values: dict[str, np.ndarray] = field(default_factory=lambda: {c: np.zeros(0) for c in READING_COLUMNS})
    # Cache digests: one row per (reading, cache key).
    c_reading: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    c_key: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    c_digest: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    last_reading_id: int = 0
    # Job records (jobs.py reads them): what tells a runner whose jobs die before any test.
    jobs: JobRows = field(default_factory=JobRows)

    @property
    def size(self) -> int:
        return int(self.time_ms.size)

    def name(self, column: str, code: int) -> str | None:
        return self.codes[column].name(int(code))

    def jobs_in(self, rows: np.ndarray) -> int:
        """Distinct jobs among the rows (an index array or a mask); distinct hours where jobs are not named."""
        return int(np.unique(self.units_of(rows)).size)

    def units_of(self, rows: np.ndarray) -> np.ndarray:
        """Per row (an index array or a mask), a non-negative code of the unit of work it ran in: its
        job, or its hour where jobs are not named."""
        jobs = self.cols["job"][rows]
        if jobs.size and (jobs >= 0).all():
            return np.asarray(jobs, np.int64)
        return np.asarray(self.time_ms[rows] // 3_600_000, np.int64)

    def canonical(self) -> Frame:
        """The same data in an order that does not depend on arrival: codes sorted by their strings,
        results by (time, test, runner, job, run), readings by (time, runner, check). A backfill and
        live traffic then give the very same verdicts, down to the last bit of every float sum."""
        out = Frame()
        remap: dict[str, np.ndarray] = {}
        used = self._used_codes()
        for column, codes in self.codes.items():
            # Only codes some row still uses: a frame trimmed to the window and one loaded after
            # retention pruned the same rows then intern the very same strings.
            order = sorted(used[column].tolist(), key=codes.values.__getitem__)
            table = np.full(len(codes.values) + 1, NONE, np.int32)  # index -1 (None) maps to -1
            table[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int32)
            remap[column] = table
            values = [codes.values[i] for i in order]
            out.codes[column] = Codes(values=values, index={v: i for i, v in enumerate(values)})
        cols = {c: remap[c][self.cols[c]] for c in RESULT_COLUMNS}
        keys = (cols["run"], cols["job"], cols["runner"], cols["test"], self.time_ms)
        rows = np.lexsort(keys)
        out.time_ms, out.fail, out.ephemeral = self.time_ms[rows], self.fail[rows], self.ephemeral[rows]
        out.cols = {c: cols[c][rows] for c in RESULT_COLUMNS}
        out.last_result_id = self.last_result_id

        runner, check = remap["runner"][self.r_runner], remap["check"][self.r_check]
        r_order = np.lexsort((check, runner, self.r_time_ms))
        position = np.empty(r_order.size, np.int64)
        position[r_order] = np.arange(r_order.size)
        out.r_time_ms, out.r_runner, out.r_check = self.r_time_ms[r_order], runner[r_order], check[r_order]
        out.r_machine = remap["machine"][self.r_machine][r_order]
        out.r_pool = remap["pool"][self.r_pool][r_order]
        out.r_image = remap["image"][self.r_image][r_order]
        out.r_values = {k: v[r_order] for k, v in self.r_values.items()}
        c_reading = position[self.c_reading]
        c_key, c_digest = remap["cache_key"][self.c_key], remap["digest"][self.c_digest]
        c_order = np.lexsort((c_digest, c_key, c_reading))
        out.c_reading, out.c_key, out.c_digest = c_reading[c_order], c_key[c_order], c_digest[c_order]
        out.last_reading_id = self.last_reading_id
        out.jobs = self.jobs
        return out

    def _used_codes(self) -> dict[str, np.ndarray]:
        arrays: dict[str, list[np.ndarray]] = {column: [] for column in self.codes}
        for column in RESULT_COLUMNS:
            arrays[column].append(self.cols[column])
        for column, values in (
            ("runner", self.r_runner),
            ("machine", self.r_machine),
            ("pool", self.r_pool),
            ("image", self.r_image),
            ("check", self.r_check),
            ("cache_key", self.c_key),
            ("digest", self.c_digest),
        ):
            arrays[column].append(values)
        used = {}
        for column, parts in arrays.items():
            found = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int32)
            used[column] = found[found >= 0]
        return used

    def since(self, results_from_ms: int, readings_from_ms: int) -> Frame:
        """The rows at or after the given times, sharing this frame's codes and load position."""
        return self._kept(
            self.time_ms >= results_from_ms,
            self.r_time_ms >= readings_from_ms,
            self.jobs.cols["finished_ms"] >= results_from_ms,
        )

    def before(self, until_ms: int) -> Frame:
        """The results and readings before a time: the history as it stood then (a replay's view)."""
        return self._kept(
            self.time_ms < until_ms, self.r_time_ms < until_ms, self.jobs.cols["finished_ms"] < until_ms
        )

    def without(self, drop: np.ndarray) -> Frame:
        """The frame without the results masked by `drop`; readings and jobs kept."""
        return self._kept(~drop, np.ones(self.r_time_ms.size, bool), np.ones(self.jobs.size, bool))

    def _kept(self, keep: np.ndarray, r_keep: np.ndarray, j_keep: np.ndarray) -> Frame:
        if keep.all() and r_keep.all() and j_keep.all():
            return self
        out = Frame(
            codes=self.codes,
            last_result_id=self.last_result_id,
            last_reading_id=self.last_reading_id,
            jobs=self.jobs.kept(j_keep),
        )
        out.time_ms, out.fail, out.ephemeral = self.time_ms[keep], self.fail[keep], self.ephemeral[keep]
        out.cols = {c: v[keep] for c, v in self.cols.items()}
        out.r_time_ms, out.r_runner, out.r_check = (
            self.r_time_ms[r_keep],
            self.r_runner[r_keep],
            self.r_check[r_keep],
        )
        out.r_machine, out.r_pool, out.r_image = (
            self.r_machine[r_keep],
            self.r_pool[r_keep],
            self.r_image[r_keep],
        )
        out.r_values = {k: v[r_keep] for k, v in self.r_values.items()}
        position = np.cumsum(r_keep) - 1  # a kept reading's index in the new arrays
        c_keep = r_keep[self.c_reading]
        out.c_reading = position[self.c_reading[c_keep]].astype(np.int64)
        out.c_key, out.c_digest = self.c_key[c_keep], self.c_digest[c_keep]
        return out

    def load(self, conn: Connection, batch: int = 200_000) -> int:
        """Read rows stored since the last load; returns how many results were added."""
        added = 0
        while True:
            got = self._load_results(conn, batch)
            added += got
            if got < batch:
                break
        while self._load_readings(conn, batch) == batch:
            pass
        self.jobs.load(conn)
        return added

    def _load_results(self, conn: Connection, limit: int) -> int:
        t = tables.results
        query = (
            select(
                t.c.id,
                t.c.time_ms,
                t.c.outcome,
                t.c.ephemeral,
                t.c.test_id,
                t.c.runner_id,
                t.c.machine,
                t.c.pool,
                t.c.image,
                t.c.shard,
                t.c.job_id,
                t.c.run_id,
                t.c.commit,
            )
            .where(t.c.id > self.last_result_id)
            .order_by(t.c.id)
            .limit(limit)
        )
        rows = _fetch_plain(conn, query)
        if not rows:
            return 0
        self.last_result_id = int(rows[-1][0])
        self.append_results(rows)
        return len(rows)

    def append_results(self, rows: Sequence[Sequence[Any]]) -> None:
        """Rows as (id, time_ms, outcome, ephemeral, test, runner, machine, pool, image, shard, job, run, commit)."""
        kept = [r for r in rows if r[2] != "skipped"]
        n = len(kept)
        self.time_ms = np.concatenate([self.time_ms, np.fromiter(map(itemgetter(1), kept), np.int64, n)])
        failed = {"failed": True, "error": True}
        self.fail = np.concatenate(
            [self.fail, np.fromiter(map(failed.get, map(itemgetter(2), kept), repeat(False)), bool, n)]
        )
        self.ephemeral = np.concatenate([self.ephemeral, np.fromiter(map(itemgetter(3), kept), bool, n)])
        for offset, column in enumerate(RESULT_COLUMNS, start=4):
            values = self.codes[column].codes_of(map(itemgetter(offset), kept), n)
            self.cols[column] = np.concatenate([self.cols[column], values])

    def _load_readings(self, conn: Connection, limit: int) -> int:
        t = tables.readings
        query = (
            select(
                t.c.id,
                t.c.observed_ms,
                t.c.runner_id,
                t.c.machine,
                t.c.pool,
                t.c.image,
                t.c.check,
                t.c.status,
                t.c.data,
            )
            .where(t.c.id > self.last_reading_id)
            .order_by(t.c.id)
            .limit(limit)
        )
        rows = _fetch_plain(conn, query)
        if not rows:
            return 0
        self.last_reading_id = int(rows[-1][0])
        self.append_readings(rows)
        return len(rows)

    def append_readings(self, rows: Sequence[Sequence[Any]]) -> None:
        """Rows as (id, observed_ms, runner, machine, pool, image, check, status, data as JSON text)."""
        n = len(rows)
        base = self.r_time_ms.size
        values = {c: np.full(n, np.nan) for c in READING_COLUMNS}
        cache_rows: list[tuple[int, int, int]] = []
        checks = list(map(itemgetter(6), rows))
        for i, (check, data) in enumerate(
            zip(checks, map(json.loads, map(itemgetter(8), rows)), strict=True)
        ):
            _flatten(check, data, values, i, cache_rows, base, self.codes)
        values["problem"] = np.fromiter(map("problem".__eq__, map(itemgetter(7), rows)), float, n)
        self.r_time_ms = np.concatenate([self.r_time_ms, np.fromiter(map(itemgetter(1), rows), np.int64, n)])
        for name, column, offset in (
            ("r_runner", "runner", 2),
            ("r_machine", "machine", 3),
            ("r_pool", "pool", 4),
            ("r_image", "image", 5),
        ):
            codes = self.codes[column].codes_of(map(itemgetter(offset), rows), n)
            setattr(self, name, np.concatenate([getattr(self, name), codes]))
        self.r_check = np.concatenate([self.r_check, self.codes["check"].codes_of(checks, n)])
        for name in READING_COLUMNS:
            self.r_values[name] = np.concatenate([self.r_values[name], values[name]])
        if cache_rows:
            arr = np.array(cache_rows, dtype=np.int64)
            self.c_reading = np.concatenate([self.c_reading, arr[:, 0]])
            self.c_key = np.concatenate([self.c_key, arr[:, 1].astype(np.int32)])
            self.c_digest = np.concatenate([self.c_digest, arr[:, 2].astype(np.int32)])


def _fetch_plain(conn: Connection, query: Select[Any]) -> list[tuple[Any, ...]]:
    """The query's rows as plain tuples straight from the driver's cursor: at a million rows,
    building SQLAlchemy Row objects costs more than the read itself. The query's only parameters
    are integers (ids and a limit), so rendering them inline is safe."""
    sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql)
        return list(cursor.fetchall())
    finally:
        cursor.close()


def _min(values: list[Any]) -> float:
    found = [float(v) for v in values if v is not None]
    return min(found) if found else math.nan


def _flatten(
    check: str,
    data: dict[str, Any],
    values: dict[str, np.ndarray],
    i: int,
    cache_rows: list[tuple[int, int, int]],
    base: int,
    codes: dict[str, Codes],
) -> None:
    """Reduce one reading to the numbers the evidence step compares against thresholds."""
    if check == "disk":
        paths = data.get("paths", [])
        values["disk_free_ratio"][i] = _min([p.get("free_ratio") for p in paths])
        values["disk_free_bytes"][i] = _min([p.get("free_bytes") for p in paths])
        values["inode_free_ratio"][i] = _min([p.get("inodes_free_ratio") for p in paths])
        read_only = [p.get("read_only") or p.get("write_probe_ok") is False for p in paths]
        values["read_only"][i] = 1.0 if any(read_only) else (0.0 if paths else math.nan)
    elif check == "memory":
        for name in ("psi_full_avg10", "psi_some_avg10", "oom_kills"):
            if data.get(name) is not None:
                values[name][i] = float(data[name])
        ratio = data.get("available_ratio")
        if ratio is None and data.get("available_bytes") is not None and data.get("total_bytes"):
            ratio = data["available_bytes"] / data["total_bytes"]
        if ratio is not None:
            values["mem_available_ratio"][i] = float(ratio)
    elif check == "clock":
        offset = data.get("offset_s")
        if offset is not None:
            values["clock_offset_s"][i] = float(offset)
    elif check == "cache":
        for cache in data.get("caches", []):
            if cache.get("digest"):
                cache_rows.append(
                    (base + i, codes["cache_key"].code(cache["key"]), codes["digest"].code(cache["digest"]))
                )
