"""SQL for SKUs."""

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from app.models.sku import Sku


def add(db: Session, code: str, name: str) -> Sku | None:
    """The new SKU; None when another SKU has the code (the database's unique key decides)."""
    statement = (
        insert(Sku)
        .values(code=code, name=name)
        .on_conflict_do_nothing(constraint="skus_code_key")
        .returning(Sku)
    )
    sku = db.scalar(statement)
    db.commit()
    return sku


def by_code(db: Session, code: str) -> Sku | None:
    return db.scalar(select(Sku).where(Sku.code == code))
