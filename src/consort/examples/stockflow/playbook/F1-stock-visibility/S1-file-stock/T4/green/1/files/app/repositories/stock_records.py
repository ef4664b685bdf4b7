"""SQL for stock records: one count per SKU per location."""

from sqlalchemy import func
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from app.models.stock_record import StockRecord


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
