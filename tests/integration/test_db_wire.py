"""The driver-less catalog read against the real embedded server: the same rows psycopg reads,
the server's own refusals, and the branch table it gives `consort status` and `branch list`."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from consort.adapters.db import wire
from consort.adapters.db.backend import EmbeddedBackend, open_backend, read_catalog
from consort.adapters.db.branching import BranchDatabases
from consort.adapters.db.cluster import SUPERUSER
from consort.core.project import find_project

pytestmark = pytest.mark.integration

QUESTION = (
    "SELECT d.datname, shobj_description(d.oid, 'pg_database'), d.datconnlimit, d.oid,"
    " NULL::text, 'grüße ' || repeat('x', 70000) FROM pg_database d ORDER BY d.datname"
)


def _backend(root: Path) -> EmbeddedBackend:
    backend = open_backend(find_project(root))
    assert isinstance(backend, EmbeddedBackend)
    backend.ensure_running()
    return backend


def _ask(backend: EmbeddedBackend, sql: str, *, password: str | None = None) -> list[wire.Row]:
    secret = backend.password(SUPERUSER) if password is None else password
    endpoint = backend.endpoint
    return wire.query(
        endpoint.host,
        endpoint.port,
        sql,
        user=SUPERUSER,
        password=secret,
        dbname="postgres",
        timeout_s=10,
    )


def test_it_reads_what_psycopg_reads_as_text(project):
    backend = _backend(project)
    with backend.admin() as conn:
        expected = [
            tuple(None if v is None else str(v) for v in row)
            for row in conn.execute(QUESTION).fetchall()
        ]
    assert _ask(backend, QUESTION) == expected
    assert any(row[1] is not None for row in expected)  # Consort's comments came through
    assert read_catalog(backend, QUESTION) == expected


def test_a_wrong_password_is_refused_by_the_server(project):
    with pytest.raises(wire.Refused, match="password authentication failed"):
        _ask(_backend(project), "SELECT 1", password="not-the-password")


def test_a_query_the_server_rejects_is_refused_with_its_message(project):
    with pytest.raises(wire.Refused, match="syntax error"):
        _ask(_backend(project), "SELEC 1")


def test_the_branch_listing_is_the_drivers(project):
    dbs = BranchDatabases(_backend(project))
    assert dbs.listing() == dbs.infos()
    assert [i.database for i in dbs.listing(sizes=True)] == [i.database for i in dbs.infos()]
    assert all(i.size_bytes for i in dbs.listing(sizes=True))


def test_the_driver_answers_when_the_light_read_cannot(project, monkeypatch):
    backend = _backend(project)
    expected = read_catalog(backend, QUESTION)

    def unsupported(*args: object, **kwargs: object) -> list[wire.Row]:
        raise wire.Unsupported("as a server asking for another login would")

    monkeypatch.setattr(wire, "query", unsupported)
    assert read_catalog(backend, QUESTION) == expected
    with pytest.raises(psycopg.errors.SyntaxError):
        read_catalog(backend, "SELEC 1")
