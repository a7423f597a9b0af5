"""Schema versions: a new database is migrated, an older or newer one is refused with what to run."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from tests.servers import REPO, controller_cmd


def serve_once(db: Path) -> subprocess.CompletedProcess[str]:
    # Port 1 cannot be bound by the test, so a serve that passes the schema check fails later, visibly.
    return subprocess.run(
        controller_cmd("serve", "--db", str(db), "--port", "1"),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def test_migrate_is_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    first = subprocess.run(
        controller_cmd("migrate", "--db", str(db)), capture_output=True, text=True, cwd=REPO, check=True
    )
    assert "migrated database from empty to" in first.stdout
    second = subprocess.run(
        controller_cmd("migrate", "--db", str(db)), capture_output=True, text=True, cwd=REPO, check=True
    )
    assert "database already at" in second.stdout
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_older_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    subprocess.run(controller_cmd("migrate", "--db", str(db)), capture_output=True, cwd=REPO, check=True)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM alembic_version")
    done = serve_once(db)
    assert done.returncode == 1
    assert f"run `runner-controller migrate --db {db}` first" in done.stderr


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    subprocess.run(controller_cmd("migrate", "--db", str(db)), capture_output=True, cwd=REPO, check=True)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    done = serve_once(db)
    assert done.returncode == 1
    assert "is newer than this controller knows" in done.stderr


def test_token_create_prints_only_the_token(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    done = subprocess.run(
        controller_cmd("token", "create", "--role", "ingest", "--db", str(db)),
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("rct_")
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT token_hash, role FROM tokens").fetchall()
    assert stored[0][1] == "ingest" and done.stdout.strip() not in str(stored)
    agent = subprocess.run(
        controller_cmd("token", "create", "--role", "agent", "--db", str(db)),
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert agent.returncode == 1 and "an agent token must name its runner: add --runner ID" in agent.stderr
