"""Test fixtures: the app over HTTP, and a database session, on the database DATABASE_URL names.

Consort runs the suite on a throwaway copy of the branch's database, already migrated.
"""

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.db import engine
from app.main import app


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def db() -> Iterator[Session]:
    with sessionmaker(bind=engine(), expire_on_commit=False)() as session:
        yield session
