"""The catalogue: the SKUs we stock, each under a code no other SKU has."""

from sqlalchemy.orm import Session

from app.models.sku import Sku
from app.repositories import skus
from app.services.errors import AlreadyExists


def register_sku(db: Session, code: str, name: str) -> Sku:
    sku = skus.add(db, code, name)
    if sku is None:
        raise AlreadyExists(f"SKU code {code} is already taken")
    return sku
