"""Schema versions: apply Alembic migrations, and refuse to serve a database at another version."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Engine

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


class SchemaMismatch(RuntimeError):
    """The database is at another schema version than this controller's code."""


@dataclass(frozen=True)
class SchemaState:
    current: str | None
    head: str
    empty: bool

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head


def _config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def state(engine: Engine) -> SchemaState:
    script = ScriptDirectory.from_config(_config(engine))
    head = script.get_current_head()
    assert head is not None
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
        empty = not inspect(conn).get_table_names()
    return SchemaState(current=current, head=head, empty=empty)


def migrate(engine: Engine, revision: str = "head") -> None:
    config = _config(engine)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def ensure_current(engine: Engine, url_for_message: str) -> None:
    """Migrate a new, empty database; refuse an older or a newer one with what to run."""
    st = state(engine)
    if st.up_to_date:
        return
    if st.empty:
        migrate(engine)
        return
    known = {rev.revision for rev in ScriptDirectory.from_config(_config(engine)).walk_revisions()}
    if st.current is None or st.current in known:
        raise SchemaMismatch(
            f"database schema is at revision {st.current or 'none'}, this controller needs {st.head}: "
            f"run `runner-controller migrate --db {url_for_message}` first"
        )
    raise SchemaMismatch(
        f"database schema revision {st.current} is newer than this controller knows (its newest is "
        f"{st.head}): upgrade runnerctl on this host, or point --db at another database"
    )
