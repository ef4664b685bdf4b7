"""The catalogue: the SKUs we stock and the locations we keep them in, each under a code that
no other SKU (or location) has."""

from sqlalchemy.orm import Session

from app.models.location import Location
from app.models.sku import Sku
from app.repositories import locations, skus
from app.services.errors import AlreadyExists


def register_sku(db: Session, code: str, name: str) -> Sku:
    sku = skus.add(db, code, name)
    if sku is None:
        raise AlreadyExists(f"SKU code {code} is already taken")
    return sku


def register_location(db: Session, code: str, name: str) -> Location:
    location = locations.add(db, code, name)
    if location is None:
        raise AlreadyExists(f"location code {code} is already taken")
    return location


def all_locations(db: Session) -> list[Location]:
    return locations.all_by_code(db)
