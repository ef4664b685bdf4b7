"""The project a command works on, and its state as derived from the ledger and the files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from consort.core.project import Project, find_project

if TYPE_CHECKING:
    from consort.core.state import State

__all__ = ["Project", "derived_state", "find_project"]


def derived_state(project: Project) -> State:
    """The State as the ledger and the artifact files make it now (reads only)."""
    from consort.core.derive import derive
    from consort.core.ledger import Ledger, ledger_path

    path = ledger_path(project.state_dir)
    events = Ledger(path).read() if path.exists() else []
    return derive(events, project.config, project.state_dir)
