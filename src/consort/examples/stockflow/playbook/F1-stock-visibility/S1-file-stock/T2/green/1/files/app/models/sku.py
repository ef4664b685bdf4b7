"""A SKU: one kind of item we stock, known by its code."""

from sqlalchemy import BigInteger, Identity, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.models import Base


class Sku(Base):
    __tablename__ = "skus"
    __table_args__ = (UniqueConstraint("code", name="skus_code_key"),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    code: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text)
