"""token expiry: a token may be created to stop working by itself

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: the tokens created before never expire, as they were promised.
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("expires_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("expires_ms")
