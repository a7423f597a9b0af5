"""probation: runners uncordoned by the controller on trial until their next jobs pass

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "probations",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("incident_id", sa.String(length=40), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("started_ms", sa.BigInteger(), nullable=False),
        sa.Column("known_incidents", sa.Text(), nullable=False),
        sa.Column("jobs", sa.Text(), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.Column("ended_ms", sa.BigInteger(), nullable=True),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_probations")),
    )
    op.create_index("ix_probations_runner", "probations", ["runner_id"])


def downgrade() -> None:
    op.drop_index("ix_probations_runner", table_name="probations")
    op.drop_table("probations")
