"""Alembic environment: runs the migrations on the connection handed over by controller.db.schema."""

from __future__ import annotations

from alembic import context

from controller.db.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `runner-controller migrate`, which supplies the connection")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER most things in place
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
