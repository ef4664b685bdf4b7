"""quantity never negative

Revision ID: d1e2f3a4b5c6
Revises: b5c6d7e8f9a0
Create Date: 2025-06-02 12:15:00+00:00
"""

from alembic import op


revision = "d1e2f3a4b5c6"
down_revision = "b5c6d7e8f9a0"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # stock_records is new in this story, so no database holds rows that could break the check;
    # PostgreSQL verifies it against every existing row all the same.
    op.create_check_constraint("stock_records_quantity_check", "stock_records", "quantity >= 0")


def downgrade() -> None:
    op.drop_constraint("stock_records_quantity_check", "stock_records", type_="check")
