"""A migrated SQLite database with ten persistent runners r1..r10 in pool linux, whose agents report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from controller.db import tables
from controller.db.engine import make_engine
from controller.db.schema import migrate
from controller.remediation.audit import now_ms


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    migrate(engine)
    with engine.begin() as conn:
        conn.execute(
            tables.runners.insert(),
            [
                {
                    "id": f"r{i}",
                    "pool": "linux",
                    "provider": "double",
                    "labels": "[]",
                    "ephemeral": False,
                    "last_report_ms": now_ms(),  # agents reporting: readings fresh
                }
                for i in range(1, 11)
            ],
        )
    yield engine
    engine.dispose()
