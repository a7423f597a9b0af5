"""initial tables

Revision ID: 0001
Revises:
Create Date: 2026-12-02 17:26:57.088982
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reports",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("agent_id", sa.String(length=200), nullable=False),
        sa.Column("boot_id", sa.String(length=200), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("observed_ms", sa.BigInteger(), nullable=False),
        sa.Column("dropped", sa.Integer(), nullable=False),
        sa.Column("agent_version", sa.String(length=100), nullable=True),
        sa.Column("ingested_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reports")),
        sa.UniqueConstraint("agent_id", "boot_id", "seq", name="uq_reports_agent_boot_seq"),
    )
    with op.batch_alter_table("reports", schema=None) as batch_op:
        batch_op.create_index("ix_reports_runner_observed", ["runner_id", "observed_ms"], unique=False)

    op.create_table(
        "results",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("dedup_key", sa.String(length=32), nullable=False),
        sa.Column("test_id", sa.String(length=2000), nullable=False),
        sa.Column("outcome", sa.String(length=8), nullable=False),
        sa.Column("time_ms", sa.BigInteger(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("job_id", sa.String(length=500), nullable=True),
        sa.Column("run_id", sa.String(length=500), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=True),
        sa.Column("commit", sa.String(length=200), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("machine", sa.String(length=200), nullable=False),
        sa.Column("pool", sa.String(length=200), nullable=False),
        sa.Column("image", sa.String(length=200), nullable=True),
        sa.Column("shard", sa.String(length=200), nullable=True),
        sa.Column("ephemeral", sa.Boolean(), nullable=False),
        sa.Column("ingested_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_results")),
        sa.UniqueConstraint("dedup_key", name=op.f("uq_results_dedup_key")),
    )
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.create_index("ix_results_runner_time", ["runner_id", "time_ms"], unique=False)

    op.create_table(
        "runners",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("machine", sa.String(length=200), nullable=True),
        sa.Column("pool", sa.String(length=200), nullable=True),
        sa.Column("image", sa.String(length=200), nullable=True),
        sa.Column("shard", sa.String(length=200), nullable=True),
        sa.Column("labels", sa.Text(), nullable=False),
        sa.Column("provider", sa.String(length=200), nullable=True),
        sa.Column("ephemeral", sa.Boolean(), nullable=False),
        sa.Column("first_seen_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_seen_ms", sa.BigInteger(), nullable=True),
        sa.Column("last_report_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runners")),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("revoked_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_tokens_token_hash")),
    )
    op.create_table(
        "readings",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("report_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("machine", sa.String(length=200), nullable=False),
        sa.Column("pool", sa.String(length=200), nullable=False),
        sa.Column("image", sa.String(length=200), nullable=True),
        sa.Column("observed_ms", sa.BigInteger(), nullable=False),
        sa.Column("check", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("reason", sa.String(length=100), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["report_id"], ["reports.id"], name=op.f("fk_readings_report_id_reports"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_readings")),
    )
    with op.batch_alter_table("readings", schema=None) as batch_op:
        batch_op.create_index("ix_readings_check_observed", ["check", "observed_ms"], unique=False)
        batch_op.create_index("ix_readings_runner_observed", ["runner_id", "observed_ms"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("readings", schema=None) as batch_op:
        batch_op.drop_index("ix_readings_runner_observed")
        batch_op.drop_index("ix_readings_check_observed")

    op.drop_table("readings")
    op.drop_table("tokens")
    op.drop_table("runners")
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.drop_index("ix_results_runner_time")

    op.drop_table("results")
    with op.batch_alter_table("reports", schema=None) as batch_op:
        batch_op.drop_index("ix_reports_runner_observed")

    op.drop_table("reports")
