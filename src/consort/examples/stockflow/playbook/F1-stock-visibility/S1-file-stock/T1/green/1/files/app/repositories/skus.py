"""SQL for SKUs."""

from sqlalchemy.orm import Session

from app.models.sku import Sku


def add(db: Session, code: str, name: str) -> Sku:
    sku = Sku(code=code, name=name)
    db.add(sku)
    db.commit()
    return sku
