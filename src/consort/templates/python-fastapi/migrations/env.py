"""Alembic's environment: migrate the database DATABASE_URL names."""

from alembic import context
from sqlalchemy import create_engine

from app.models import Base
from app.settings import database_url

target_metadata = Base.metadata


def run_migrations_online() -> None:
    engine = create_engine(database_url())
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            context.run_migrations()


run_migrations_online()
