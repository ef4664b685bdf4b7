"""Stock counts: how many of each SKU sit at each location."""

from sqlalchemy.orm import Session

from app.repositories import locations, skus, stock_records
from app.services.errors import NotFound


def file_count(db: Session, location_code: str, sku_code: str, quantity: int) -> None:
    """Record the latest count of a SKU at a location; it replaces any earlier count."""
    location = locations.by_code(db, location_code)
    if location is None:
        raise NotFound(f"no location has the code {location_code}")
    sku = skus.by_code(db, sku_code)
    if sku is None:
        raise NotFound(f"no SKU has the code {sku_code}")
    stock_records.put(db, sku.id, location.id, quantity)
