"""jobs: one row per finished CI job attempt, the evidence against runners whose jobs die before any test

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("dedup_key", sa.String(length=32), nullable=False),
        sa.Column("job_id", sa.String(length=500), nullable=False),
        sa.Column("run_id", sa.String(length=500), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("conclusion", sa.String(length=20), nullable=False),
        sa.Column("failed_step", sa.String(length=500), nullable=True),
        sa.Column("failure_reason", sa.String(length=200), nullable=True),
        sa.Column("started_ms", sa.BigInteger(), nullable=True),
        sa.Column("finished_ms", sa.BigInteger(), nullable=False),
        sa.Column("tests", sa.Integer(), nullable=True),
        sa.Column("commit", sa.String(length=200), nullable=True),
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("machine", sa.String(length=200), nullable=False),
        sa.Column("pool", sa.String(length=200), nullable=False),
        sa.Column("image", sa.String(length=200), nullable=True),
        sa.Column("shard", sa.String(length=200), nullable=True),
        sa.Column("ephemeral", sa.Boolean(), nullable=False),
        sa.Column("provider", sa.String(length=200), nullable=True),
        sa.Column("ingested_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
        sa.UniqueConstraint("dedup_key", name=op.f("uq_jobs_dedup_key")),
    )
    op.create_index("ix_jobs_finished", "jobs", ["finished_ms"])
    op.create_index("ix_jobs_runner_finished", "jobs", ["runner_id", "finished_ms"])
    op.create_index("ix_jobs_job", "jobs", ["job_id"])


def downgrade() -> None:
    for index in ("ix_jobs_job", "ix_jobs_runner_finished", "ix_jobs_finished"):
        op.drop_index(index, table_name="jobs")
    op.drop_table("jobs")
