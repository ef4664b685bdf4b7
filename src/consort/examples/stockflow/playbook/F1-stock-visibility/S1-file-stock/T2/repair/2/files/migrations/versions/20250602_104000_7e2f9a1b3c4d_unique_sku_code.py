"""unique sku code

Revision ID: 7e2f9a1b3c4d
Revises: 4c1d2e3f5a6b
Create Date: 2025-06-02 10:40:00+00:00
"""

from alembic import op


revision = "7e2f9a1b3c4d"
down_revision = "4c1d2e3f5a6b"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_unique_constraint("skus_code_key", "skus", ["code"])


def downgrade() -> None:
    op.drop_constraint("skus_code_key", "skus", type_="unique")
