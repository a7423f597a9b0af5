"""What a database error means for a client: the disk is full, or the database is out of reach for now.

Both leave nothing half-written (every write is one transaction) and both pass by themselves once an
operator frees space or the server is back, so the API answers 507 or 503 with the reason instead of a
bare 500, and a sender keeps its data and retries.
"""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

# SQLSTATE class 53 "insufficient resources": 53100 disk_full.
_PG_DISK_FULL = "53100"


@dataclass(frozen=True)
class Failure:
    disk_full: bool
    message: str


def classify(error: DBAPIError, engine: Engine) -> Failure | None:
    """A Failure for a full disk or an unreachable database; None for anything else (a bug: a 500)."""
    orig = error.orig
    if _sqlite_full(orig):
        return Failure(True, f"the database's disk is full ({_sqlite_space(engine)})")
    if getattr(orig, "sqlstate", None) == _PG_DISK_FULL:
        return Failure(True, f"the PostgreSQL server's disk is full ({_first_line(orig)})")
    if isinstance(error, OperationalError | InterfaceError) or error.connection_invalidated:
        return Failure(False, f"database unavailable ({_first_line(orig)})")
    return None


def _sqlite_full(orig: BaseException | None) -> bool:
    return isinstance(orig, sqlite3.Error) and getattr(orig, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL


def _sqlite_space(engine: Engine) -> str:
    path = engine.url.database or ""
    if not path or path == ":memory:":
        return "in-memory database"
    directory = Path(path).resolve().parent
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return f"{path}"
    return f"{path}: {free:,} bytes free on the filesystem of {directory}"


def _first_line(orig: BaseException | None) -> str:
    lines = str(orig or "").strip().splitlines()
    return (lines[0] if lines else type(orig).__name__)[:300]
