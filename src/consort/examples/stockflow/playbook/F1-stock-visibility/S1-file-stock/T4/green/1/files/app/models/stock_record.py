"""A stock record: the latest count of one SKU at one location."""

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    UniqueConstraint,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.models import Base


class StockRecord(Base):
    __tablename__ = "stock_records"
    __table_args__ = (
        UniqueConstraint("sku_id", "location_id", name="stock_records_sku_id_location_id_key"),
        Index("stock_records_location_id_idx", "location_id"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    sku_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("skus.id", name="stock_records_sku_id_fkey", ondelete="RESTRICT")
    )
    location_id: Mapped[int] = mapped_column(
        BigInteger,
        ForeignKey("locations.id", name="stock_records_location_id_fkey", ondelete="RESTRICT"),
    )
    quantity: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=func.now()
    )
