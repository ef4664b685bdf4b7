"""Stock counts: how many of each SKU sit at each location."""

from dataclasses import dataclass

from sqlalchemy.orm import Session

from app.models.location import Location
from app.models.sku import Sku
from app.repositories import locations, skus, stock_records
from app.repositories.stock_records import LocationCount, SkuCount
from app.services.errors import NotFound


@dataclass(frozen=True)
class LocationStock:
    """A location and every SKU filed there, in SKU code order."""

    location: Location
    counts: list[SkuCount]


@dataclass(frozen=True)
class SkuStock:
    """A SKU and every location that holds it, in location code order."""

    sku: Sku
    counts: list[LocationCount]

    @property
    def total(self) -> int:
        return sum(count.quantity for count in self.counts)


def file_count(db: Session, location_code: str, sku_code: str, quantity: int) -> None:
    """Record the latest count of a SKU at a location; it replaces any earlier count."""
    location = _location(db, location_code)
    sku = _sku(db, sku_code)
    stock_records.put(db, sku.id, location.id, quantity)


def stock_at_location(db: Session, location_code: str) -> LocationStock:
    location = _location(db, location_code)
    return LocationStock(location, stock_records.at_location(db, location.id))


def stock_of_sku(db: Session, sku_code: str) -> SkuStock:
    sku = _sku(db, sku_code)
    return SkuStock(sku, stock_records.of_sku(db, sku.id))


def _location(db: Session, code: str) -> Location:
    location = locations.by_code(db, code)
    if location is None:
        raise NotFound(f"no location has the code {code}")
    return location


def _sku(db: Session, code: str) -> Sku:
    sku = skus.by_code(db, code)
    if sku is None:
        raise NotFound(f"no SKU has the code {code}")
    return sku
