"""SQL for locations."""

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from app.models.location import Location


def add(db: Session, code: str, name: str) -> Location | None:
    """The new location; None when another location has the code."""
    statement = (
        insert(Location)
        .values(code=code, name=name)
        .on_conflict_do_nothing(constraint="locations_code_key")
        .returning(Location)
    )
    location = db.scalar(statement)
    db.commit()
    return location


def by_code(db: Session, code: str) -> Location | None:
    return db.scalar(select(Location).where(Location.code == code))


def all_by_code(db: Session) -> list[Location]:
    """Every location, in code order (the unique key's index serves the order)."""
    return list(db.scalars(select(Location).order_by(Location.code)))
