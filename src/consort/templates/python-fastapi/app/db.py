"""The database engine and sessions (SQLAlchemy 2)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from sqlalchemy import Engine, create_engine
from sqlalchemy.orm import Session, sessionmaker

from app.settings import database_url


@lru_cache
def engine() -> Engine:
    return create_engine(database_url(), pool_pre_ping=True)


def session() -> Iterator[Session]:
    """A request's session: a FastAPI dependency."""
    with sessionmaker(bind=engine(), expire_on_commit=False)() as db:
        yield db
