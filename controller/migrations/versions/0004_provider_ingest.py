"""provider ingest: webhook deliveries (replay protection) and poll cursors

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("delivery_id", sa.String(length=200), nullable=False),
        sa.Column("event", sa.String(length=100), nullable=True),
        sa.Column("received_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("provider", "delivery_id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index("ix_webhook_deliveries_received", "webhook_deliveries", ["received_ms"])
    op.create_table(
        "poll_cursors",
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("cursor", sa.Text(), nullable=True),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("provider", name=op.f("pk_poll_cursors")),
    )


def downgrade() -> None:
    op.drop_table("poll_cursors")
    op.drop_index("ix_webhook_deliveries_received", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
