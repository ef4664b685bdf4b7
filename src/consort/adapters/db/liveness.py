"""Whether the database server lived through a run: decided by Consort's own look at the server,
never by reading what the run printed.

A test run that fails because the server went away ("connection refused") is Consort's failure,
not the agent's. But the run's output is the agent's code's to write: code that prints
"connection refused" must not earn a free re-run. So the server is identified before the run by
its postmaster's start time, asked over a connection of Consort's own, and after a failed run
asked again: a server that no longer runs, does not answer, or answers with another start time
(it was restarted) was lost. A backend that crashed (what code under test can cause) is not a
loss: the postmaster restarts its backends and keeps its start time.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

from consort.adapters.db.backend import Backend
from consort.core.errors import ConsortError

if TYPE_CHECKING:
    import psycopg

IDENTITY_SQL = "SELECT pg_postmaster_start_time()::text"


def server_identity(backend: Backend, using: psycopg.Connection[Any] | None = None) -> str:
    """The running server's identity (its postmaster's start time); starts it when it is down.
    Asked over `using` where given, else over a new connection."""
    if using is not None:
        row = using.execute(IDENTITY_SQL).fetchone()
        return str(row[0]) if row else ""
    with backend.admin() as conn:
        return server_identity(backend, conn)


def server_loss(
    backend: Backend, identity: str, using: psycopg.Connection[Any] | None = None
) -> str | None:
    """Why the server identified by `identity` was lost since, or None when it still serves.

    Asked over `using` (the connection `identity` was read over) where it still works: a
    server that restarted, or whose backends were all restarted after one crashed, has broken
    it, and a new connection asks again."""
    import psycopg

    if not backend.is_running():
        return "the database server stopped"
    if using is not None and not using.closed and not using.broken:
        try:
            now = server_identity(backend, using)
        except psycopg.Error:
            pass
        else:
            return None if now == identity else "the database server was restarted"
    try:
        now = server_identity(backend)
    except ConsortError as exc:
        return f"the database server does not answer ({exc.message})"
    if now != identity:
        return "the database server was restarted"
    return None


class ServerWatch:
    """A run's look at the server: its identity read when the block starts, and `loss()`
    asked after the run over the same connection (a login saved), held idle meanwhile on the
    maintenance database."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self._conn: psycopg.Connection[Any] | None = None
        self.identity = ""

    def __enter__(self) -> ServerWatch:
        self._conn = self.backend.admin()
        try:
            self.identity = server_identity(self.backend, self._conn)
        except BaseException:
            self._conn.close()
            raise
        return self

    def loss(self) -> str | None:
        return server_loss(self.backend, self.identity, self._conn)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._conn is not None:
            self._conn.close()
