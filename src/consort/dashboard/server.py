"""Starting the dashboard: a socket on 127.0.0.1, a fresh token when a person is at the
terminal, and uvicorn serving the web app until Ctrl-C.

The token lives in this process only: printed once on the terminal, never written to a file,
never part of a URL, never logged (uvicorn's access log is off, and the log level is warning).
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from consort.dashboard.guard import LOOPBACK, Guard

TOKEN_BYTES = 24


@dataclass(frozen=True)
class Started:
    url: str
    token: str | None
    read_only_reason: str | None


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (port 0: a free one); never another address."""
    from consort.app.errors import UsageError

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {LOOPBACK}:{port}: {exc.strerror}", fix="--port N"
        ) from exc
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(checkout: Path, port: int, announce: Callable[[Started], None]) -> None:
    """Serve the project at or above `checkout` until interrupted."""
    import uvicorn

    from consort.app.dashboard import why_read_only
    from consort.app.project import find_project
    from consort.dashboard.web import create_app

    find_project(checkout)  # fail before listening, outside a project
    reason = why_read_only()
    token = secrets.token_urlsafe(TOKEN_BYTES) if reason is None else None
    sock = bind(port)
    guard = Guard(sock.getsockname()[1], token)
    config = uvicorn.Config(
        create_app(checkout, guard),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=2,
    )
    announce(Started(guard.url, token, reason))
    uvicorn.Server(config).run(sockets=[sock])
