"""create stock records

Revision ID: b5c6d7e8f9a0
Revises: 9a3b5c7d1e2f
Create Date: 2025-06-02 11:45:00+00:00
"""

from alembic import op
import sqlalchemy as sa


revision = "b5c6d7e8f9a0"
down_revision = "9a3b5c7d1e2f"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stock_records",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), primary_key=True),
        sa.Column("sku_id", sa.BigInteger(), nullable=False),
        sa.Column("location_id", sa.BigInteger(), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["sku_id"], ["skus.id"], name="stock_records_sku_id_fkey", ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(
            ["location_id"],
            ["locations.id"],
            name="stock_records_location_id_fkey",
            ondelete="RESTRICT",
        ),
        sa.UniqueConstraint(
            "sku_id", "location_id", name="stock_records_sku_id_location_id_key"
        ),
    )
    op.create_index("stock_records_location_id_idx", "stock_records", ["location_id"])


def downgrade() -> None:
    op.drop_index("stock_records_location_id_idx", table_name="stock_records")
    op.drop_table("stock_records")
