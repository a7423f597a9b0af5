"""provider memory: what a provider remembers about a runner between cordon and uncordon

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "provider_memory",
        sa.Column("provider", sa.String(length=40), nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("provider", "runner_id", name=op.f("pk_provider_memory")),
    )


def downgrade() -> None:
    op.drop_table("provider_memory")
