"""remediation: audit log, runner states, reruns, flake clearances

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "actions",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("action", sa.String(length=30), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=True),
        sa.Column("incident_id", sa.String(length=40), nullable=True),
        sa.Column("job_id", sa.String(length=500), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("mode", sa.String(length=10), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_actions")),
        sa.UniqueConstraint("key", name=op.f("uq_actions_key")),
    )
    op.create_index("ix_actions_runner_created", "actions", ["runner_id", "created_ms"])
    op.create_table(
        "runner_states",
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=True),
        sa.Column("by", sa.String(length=200), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("incident_id", sa.String(length=40), nullable=True),
        sa.Column("at_ms", sa.BigInteger(), nullable=True),
        sa.Column("expires_ms", sa.BigInteger(), nullable=True),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("runner_id", name=op.f("pk_runner_states")),
    )
    op.create_table(
        "reruns",
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("incident_id", sa.String(length=40), nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=False),
        sa.Column("job_id", sa.String(length=500), nullable=False),
        sa.Column("run_id", sa.String(length=500), nullable=True),
        sa.Column("new_job_id", sa.String(length=500), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_reruns")),
    )
    op.create_index("ix_reruns_job", "reruns", ["job_id"])
    op.create_table(
        "clearances",
        sa.Column("incident_id", sa.String(length=40), nullable=False),
        sa.Column("runner_id", sa.String(length=200), nullable=True),
        sa.Column("test_ids", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("incident_id", name=op.f("pk_clearances")),
    )


def downgrade() -> None:
    op.drop_table("clearances")
    op.drop_index("ix_reruns_job", table_name="reruns")
    op.drop_table("reruns")
    op.drop_table("runner_states")
    op.drop_index("ix_actions_runner_created", table_name="actions")
    op.drop_table("actions")
