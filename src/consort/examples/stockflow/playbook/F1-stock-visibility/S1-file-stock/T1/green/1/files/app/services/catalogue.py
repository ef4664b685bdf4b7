"""The catalogue: the SKUs we stock."""

from sqlalchemy.orm import Session

from app.models.sku import Sku
from app.repositories import skus


def register_sku(db: Session, code: str, name: str) -> Sku:
    return skus.add(db, code, name)
