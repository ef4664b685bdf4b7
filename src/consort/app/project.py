"""The project a command works on, and its state as derived from the ledger and the files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from consort.core.project import Project, find_project

if TYPE_CHECKING:
    from collections.abc import Sequence

    from consort.core.ledger import Event
    from consort.core.state import State

__all__ = ["Project", "derived_state", "find_project", "ledger_events"]


def ledger_events(project: Project) -> list[Event]:
    """Every event of the project's ledger (none before the first)."""
    from consort.core.ledger import Ledger, ledger_path

    path = ledger_path(project.state_dir)
    return Ledger(path).read() if path.exists() else []


def derived_state(project: Project, events: Sequence[Event] | None = None) -> State:
    """The State as the ledger and the artifact files make it now (reads only); `events`, when
    the caller has read the ledger already, spares reading it again."""
    from consort.core.derive import derive

    read = ledger_events(project) if events is None else events
    return derive(read, project.config, project.state_dir)
