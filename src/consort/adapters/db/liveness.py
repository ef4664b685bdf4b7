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

from consort.adapters.db.backend import Backend
from consort.core.errors import ConsortError

IDENTITY_SQL = "SELECT pg_postmaster_start_time()::text"


def server_identity(backend: Backend) -> str:
    """The running server's identity (its postmaster's start time); starts it when it is down."""
    with backend.admin() as conn:
        row = conn.execute(IDENTITY_SQL).fetchone()
    return str(row[0]) if row else ""


def server_loss(backend: Backend, identity: str) -> str | None:
    """Why the server identified by `identity` was lost since, or None when it still serves."""
    if not backend.is_running():
        return "the database server stopped"
    try:
        now = server_identity(backend)
    except ConsortError as exc:
        return f"the database server does not answer ({exc.message})"
    if now != identity:
        return "the database server was restarted"
    return None
