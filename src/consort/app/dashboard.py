"""The dashboard's command API: what the page reads (overview, the ledger as it grows) and the
two decisions a person may make there (approve, reject), recorded as they are at a terminal.

A decision from the page needs what one at the terminal needs: a person. The dashboard proves
it with a token that it prints only when it was started at an interactive terminal, so a page
decision stands for that terminal's person; started without one, the dashboard is read-only.
The one other channel to a person is the editor extension: `consort dashboard --editor` hands
its token to the extension that started it, through a pipe, never through a file or a terminal.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator

from consort.app.ledger_feed import LedgerFeed, feed
from consort.app.orchestrate import DecisionOutcome
from consort.app.overview import Overview, overview
from consort.core.errors import UsageError
from consort.core.project import Project
from consort.core.state import GateKind

__all__ = [
    "DecisionOutcome",
    "LedgerFeed",
    "Overview",
    "approve_from_page",
    "decisions_possible",
    "feed",
    "for_editor",
    "overview",
    "reject_from_page",
    "why_read_only",
]


def why_read_only() -> str | None:
    """Why page decisions cannot be offered by this process (None: they can)."""
    from consort.lanes.humans import TASK_ENV, person_present

    if os.environ.get(TASK_ENV):
        return "started inside an agent turn: gates are the product owner's"
    if not person_present():
        return "started without an interactive terminal: no token was made, the page is read-only"
    return None


def _stdout_kind() -> str | None:
    """What standard output is, when it is not a pipe or a socket (None: it is one)."""
    mode = os.fstat(sys.stdout.fileno()).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return None
    if sys.stdout.isatty():
        return "a terminal"
    return "a file" if stat.S_ISREG(mode) else "a device"


@contextlib.contextmanager
def for_editor() -> Iterator[None]:
    """Serve for the editor extension that started this process and reads its standard output.

    The token is printed there, so that output must be a pipe (or socket) to that extension:
    redirected to a file it would be written to disk, and at a terminal a plain `consort
    dashboard` is the command. While the block runs, page decisions stand for the editor's person.
    """
    from consort.lanes.humans import editor_channel

    kind = _stdout_kind()
    if kind is not None:
        raise UsageError(
            f"`consort dashboard --editor` prints its token for the editor that started it, "
            f"and its standard output is {kind} here",
            fix="at a terminal, run `consort dashboard`; --editor is for the VS Code extension",
        )
    with editor_channel():
        yield


def decisions_possible() -> bool:
    return why_read_only() is None


def _gate(name: str) -> GateKind:
    try:
        return GateKind(name)
    except ValueError:
        choices = ", ".join(kind.value for kind in GateKind)
        raise UsageError(f"there is no {name!r} gate", fix=f"one of: {choices}") from None


def _require_person() -> None:
    reason = why_read_only()
    if reason is not None:
        raise UsageError(f"this dashboard is read-only: {reason}")


def approve_from_page(
    project: Project, gate: str, subject: str, note: str | None
) -> DecisionOutcome:
    """Approve a gate for the person who confirmed on the page (with the terminal's token)."""
    from consort.app.orchestrate import approve

    _require_person()
    return approve(project, _gate(gate), subject, note or None, confirm=lambda _question: True)


def reject_from_page(
    project: Project, gate: str, subject: str, note: str, artifact: str | None
) -> DecisionOutcome:
    from consort.app.orchestrate import reject

    _require_person()
    return reject(project, _gate(gate), subject, note, artifact or None)
