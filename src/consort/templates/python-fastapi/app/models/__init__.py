"""Models: tables as SQLAlchemy classes. Every layer may import them."""

from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass
