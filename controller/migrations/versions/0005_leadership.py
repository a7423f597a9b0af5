"""leadership: the leader's lease, its stored analysis for followers, and the retention roll-up

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=50), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=True),
        sa.Column("term", sa.BigInteger(), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.Column("renewed_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )
    op.create_table(
        "analysis_snapshot",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("term", sa.BigInteger(), nullable=False),
        sa.Column("as_of_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_result_id", sa.BigInteger(), nullable=False),
        sa.Column("last_reading_id", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_analysis_snapshot")),
    )
    op.create_table(
        "result_days",
        sa.Column("test_id", sa.String(length=2000), nullable=False),
        sa.Column("pool", sa.String(length=200), nullable=False),
        sa.Column("day_ms", sa.BigInteger(), nullable=False),
        sa.Column("executions", sa.BigInteger(), nullable=False),
        sa.Column("failures", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("test_id", "pool", "day_ms", name=op.f("pk_result_days")),
    )
    # Deleting a report makes the database look for its readings (the cascade): without this index,
    # every pruned report would scan the whole readings table.
    op.create_index("ix_readings_report", "readings", ["report_id"])


def downgrade() -> None:
    op.drop_index("ix_readings_report", table_name="readings")
    op.drop_table("result_days")
    op.drop_table("analysis_snapshot")
    op.drop_table("leases")
