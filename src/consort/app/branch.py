"""`consort branch ...`: paired git + database branches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from consort.adapters.branch_rows import BranchRow, Pairing
from consort.adapters.db.branching import TemplateMode
from consort.adapters.paired import PairedBranches
from consort.core.project import Project

if TYPE_CHECKING:
    from consort.adapters.db.schema_diff import SchemaDiff

__all__ = [
    "BranchCreated",
    "BranchDiff",
    "BranchRow",
    "Pairing",
    "TemplateMode",
    "create",
    "delete",
    "diff",
    "gc",
    "list_rows",
    "switch",
]


@dataclass(frozen=True)
class BranchCreated:
    name: str
    database: str

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "database": self.database}


def create(project: Project, name: str, parent: str | None, mode: TemplateMode) -> BranchCreated:
    info = PairedBranches(project).create(name, parent, mode)
    return BranchCreated(name, info.database)


def list_rows(project: Project) -> list[BranchRow]:
    return PairedBranches(project).rows()


def switch(project: Project, name: str) -> None:
    PairedBranches(project).switch(name)


def delete(project: Project, name: str, force: bool) -> None:
    PairedBranches(project).delete(name, force=force)


def gc(project: Project) -> list[str]:
    """Drop the databases of branches git no longer has, and remove what killed Consort
    processes left (databases, roles, exports, processes; worktrees too unless a `drive` is
    running), and the archived branches of closed experiments: one line per thing, each saying
    what was done."""
    from consort.core.drive_lock import WriterBusy, hold_writer
    from consort.core.ledger import Ledger, ledger_path
    from consort.lanes.experiments import collect_archived
    from consort.lanes.recover import collect_leftovers

    try:
        with hold_writer(project.state_dir):
            path = ledger_path(project.state_dir)
            archived = collect_archived(project, Ledger(path)) if path.exists() else []
            return archived + collect_leftovers(
                project, writer=True, start_server=True, branch_databases=True
            )
    except WriterBusy:
        return collect_leftovers(project, writer=False, start_server=True, branch_databases=True)


@dataclass(frozen=True)
class BranchDiff:
    base: str
    branch: str
    result: SchemaDiff

    @property
    def is_empty(self) -> bool:
        return self.result.is_empty

    def lines(self) -> list[str]:
        return self.result.lines()

    def as_json(self) -> dict[str, Any]:
        return {"base": self.base, "branch": self.branch, **self.result.as_json()}


def diff(project: Project, name: str, against: str | None) -> BranchDiff:
    """How NAME's database schema differs from its parent's (or `against`'s)."""
    from consort.adapters.db.schema_diff import diff_databases

    paired = PairedBranches(project)
    base = against or paired.parent_of(name)
    result = diff_databases(paired.backend, paired.database_of(base), paired.database_of(name))
    return BranchDiff(base, name, result)
