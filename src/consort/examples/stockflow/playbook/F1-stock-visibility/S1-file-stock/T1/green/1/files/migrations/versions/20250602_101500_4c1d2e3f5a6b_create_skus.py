"""create skus

Revision ID: 4c1d2e3f5a6b
Revises:
Create Date: 2025-06-02 10:15:00+00:00
"""

from alembic import op
import sqlalchemy as sa


revision = "4c1d2e3f5a6b"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "skus",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), primary_key=True),
        sa.Column("code", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("skus")
