"""probe before return: a probation may be one pinned probe job, run while the runner stays cordoned

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: a probation without them is the half-open kind, as every probation before this was.
    with op.batch_alter_table("probations") as batch:
        batch.add_column(sa.Column("probe_of", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("probe_job", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("probations") as batch:
        batch.drop_column("probe_job")
        batch.drop_column("probe_of")
