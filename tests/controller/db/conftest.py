from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from controller.db.engine import make_engine
from tests.servers import migrate_db


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """The controller's own engine on a migrated database, SQLite and PostgreSQL."""
    migrate_db(database_url)
    engine = make_engine(database_url)
    try:
        yield engine
    finally:
        engine.dispose()
