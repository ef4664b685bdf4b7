"""create locations

Revision ID: 9a3b5c7d1e2f
Revises: 7e2f9a1b3c4d
Create Date: 2025-06-02 11:10:00+00:00
"""

from alembic import op
import sqlalchemy as sa


revision = "9a3b5c7d1e2f"
down_revision = "7e2f9a1b3c4d"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "locations",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), primary_key=True),
        sa.Column("code", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.UniqueConstraint("code", name="locations_code_key"),
    )


def downgrade() -> None:
    op.drop_table("locations")
