"""Schema versions: a new database is migrated, an older or newer one is refused with what to run."""

from __future__ import annotations

import sqlite3
import subprocess

import pytest
from sqlalchemy import text

from tests.servers import REPO, controller_cmd, database


@pytest.fixture
def db(database_url: str) -> str:
    """The database as an operator types it: a bare SQLite path, or a postgresql:// URL."""
    return database_url.removeprefix("sqlite:///").replace("postgresql+psycopg://", "postgresql://", 1)


def serve_once(db: str) -> subprocess.CompletedProcess[str]:
    # Port 1 cannot be bound by the test, so a serve that passes the schema check fails later, visibly.
    return subprocess.run(
        controller_cmd("serve", "--db", db, "--port", "1"),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def test_migrate_is_idempotent(db: str) -> None:
    first = subprocess.run(
        controller_cmd("migrate", "--db", db), capture_output=True, text=True, cwd=REPO, check=True
    )
    assert "migrated database from empty to" in first.stdout
    second = subprocess.run(
        controller_cmd("migrate", "--db", db), capture_output=True, text=True, cwd=REPO, check=True
    )
    assert "database already at" in second.stdout
    if "://" not in db:
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_older_schema_is_refused(db: str) -> None:
    subprocess.run(controller_cmd("migrate", "--db", db), capture_output=True, cwd=REPO, check=True)
    with database(db) as conn:
        conn.execute(text("DELETE FROM alembic_version"))
    done = serve_once(db)
    assert done.returncode == 1
    assert f"run `runner-controller migrate --db {db}` first" in done.stderr


def test_newer_schema_is_refused(db: str) -> None:
    subprocess.run(controller_cmd("migrate", "--db", db), capture_output=True, cwd=REPO, check=True)
    with database(db) as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    done = serve_once(db)
    assert done.returncode == 1
    assert "is newer than this controller knows" in done.stderr


def test_token_create_prints_only_the_token(db: str) -> None:
    done = subprocess.run(
        controller_cmd("token", "create", "--role", "ingest", "--db", db),
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("rct_")
    with database(db) as conn:
        stored = conn.execute(text("SELECT token_hash, role FROM tokens")).all()
    assert stored[0][1] == "ingest" and done.stdout.strip() not in str(stored)
    agent = subprocess.run(
        controller_cmd("token", "create", "--role", "agent", "--db", db),
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert agent.returncode == 1 and "an agent token must name its runner: add --runner ID" in agent.stderr


def test_unreachable_database_is_one_error_line_without_the_password() -> None:
    done = subprocess.run(
        controller_cmd("migrate", "--db", "postgresql://postgres:s3cret@127.0.0.1:1/x"),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot open database postgresql://postgres:***@127.0.0.1:1/x: ")
    assert "s3cret" not in done.stderr + done.stdout and "Traceback" not in done.stderr
