"""Opening the database: a SQLite file by default (WAL, synchronous=FULL), PostgreSQL by URL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine

DEFAULT_SQLITE_FILE = "runnerctl.db"


def default_url(directory: Path | None = None) -> str:
    return f"sqlite:///{(directory or Path.cwd()) / DEFAULT_SQLITE_FILE}"


def normalise_url(url: str) -> str:
    """Accept a bare path or `postgresql://` and name the driver we ship with."""
    if "://" not in url:
        return f"sqlite:///{Path(url).resolve()}"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def make_engine(url: str) -> Engine:
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # pre_ping replaces connections a server restart killed; connect_timeout turns a server that does
    # not answer into a prompt 503 instead of a request that hangs.
    return create_engine(
        url, pool_pre_ping=True, pool_size=10, max_overflow=10, connect_args={"connect_timeout": 10}
    )


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    # WAL lets readers run beside the single writer; FULL makes an acknowledged commit survive a
    # power cut, not only a process kill.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
