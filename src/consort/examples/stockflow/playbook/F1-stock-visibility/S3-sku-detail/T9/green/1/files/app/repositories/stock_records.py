"""SQL for stock records: one count per SKU per location."""

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from app.models.location import Location
from app.models.sku import Sku
from app.models.stock_record import StockRecord


@dataclass(frozen=True)
class SkuCount:
    """A SKU filed at a location, and how many of it are there."""

    sku_code: str
    sku_name: str
    quantity: int


@dataclass(frozen=True)
class LocationCount:
    """A location that holds a SKU, and how many of it it holds."""

    location_code: str
    location_name: str
    quantity: int


def put(db: Session, sku_id: int, location_id: int, quantity: int) -> None:
    """File a count: a new record for the pair, or its existing record overwritten."""
    statement = insert(StockRecord).values(
        sku_id=sku_id, location_id=location_id, quantity=quantity
    )
    statement = statement.on_conflict_do_update(
        constraint="stock_records_sku_id_location_id_key",
        set_={"quantity": statement.excluded.quantity, "updated_at": func.now()},
    )
    db.execute(statement)
    db.commit()


def at_location(db: Session, location_id: int) -> list[SkuCount]:
    """Every SKU filed at the location, in SKU code order."""
    rows = db.execute(
        select(Sku.code, Sku.name, StockRecord.quantity)
        .join(StockRecord, StockRecord.sku_id == Sku.id)
        .where(StockRecord.location_id == location_id)
        .order_by(Sku.code)
    )
    return [SkuCount(code, name, quantity) for code, name, quantity in rows]


def of_sku(db: Session, sku_id: int) -> list[LocationCount]:
    """Every location that holds the SKU, in location code order."""
    rows = db.execute(
        select(Location.code, Location.name, StockRecord.quantity)
        .join(StockRecord, StockRecord.location_id == Location.id)
        .where(StockRecord.sku_id == sku_id)
        .order_by(Location.code)
    )
    return [LocationCount(code, name, quantity) for code, name, quantity in rows]
