"""The store: one SQLAlchemy model layer and Alembic migrations, the same on SQLite and PostgreSQL."""
