"""Starting the dashboard: a socket on 127.0.0.1, a fresh token when a person is at the
terminal, and uvicorn serving the web app until Ctrl-C.

The token lives in this process only: printed once on the terminal, never written to a file,
never part of a URL, never logged (uvicorn's access log is off, and the log level is warning).
Started for an editor (`--editor`), it is printed on the pipe the editor reads instead, and the
dashboard stops when the editor closes its standard input: it never outlives the editor.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from consort.dashboard.guard import LOOPBACK, Guard

if TYPE_CHECKING:
    import uvicorn

TOKEN_BYTES = 24


@dataclass(frozen=True)
class Started:
    url: str
    token: str | None
    read_only_reason: str | None

    def as_json(self) -> dict[str, object]:
        """The one line `--editor` prints for the extension (its token included: a pipe)."""
        return {
            "consort_dashboard": 1,
            "url": self.url,
            "token": self.token,
            "read_only_reason": self.read_only_reason,
        }


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


def _stop_at_end_of_input(server: uvicorn.Server) -> None:
    """Stop serving once standard input ends: the editor that started us closed it, or died."""

    def watch() -> None:
        with contextlib.suppress(OSError, ValueError):
            while sys.stdin.buffer.read(4096):
                pass
        server.should_exit = True

    threading.Thread(target=watch, name="editor-stdin", daemon=True).start()


def serve(
    checkout: Path, port: int, announce: Callable[[Started], None], *, editor: bool = False
) -> None:
    """Serve the project at or above `checkout` until interrupted (or, for an editor, until
    the editor closes our standard input)."""
    from consort.app.dashboard import for_editor
    from consort.app.project import find_project

    find_project(checkout)  # fail before listening, outside a project
    with for_editor() if editor else contextlib.nullcontext():
        _serve(checkout, port, announce, editor=editor)


def _serve(checkout: Path, port: int, announce: Callable[[Started], None], *, editor: bool) -> None:
    import uvicorn

    from consort.app.dashboard import why_read_only
    from consort.dashboard.web import create_app

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
    server = uvicorn.Server(config)
    announce(Started(guard.url, token, reason))
    if editor:
        _stop_at_end_of_input(server)
    server.run(sockets=[sock])
