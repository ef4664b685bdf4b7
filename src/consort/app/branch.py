"""`consort branch ...`: paired git + database branches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from consort.adapters.db.branching import DbInfo, TemplateMode
from consort.adapters.paired import BranchRow, PairedBranches
from consort.core.project import Project

if TYPE_CHECKING:
    from consort.adapters.db.schema_diff import SchemaDiff


def create(project: Project, name: str, parent: str | None, mode: TemplateMode) -> DbInfo:
    return PairedBranches(project).create(name, parent, mode)


def list_rows(project: Project) -> list[BranchRow]:
    return PairedBranches(project).rows()


def switch(project: Project, name: str) -> None:
    PairedBranches(project).switch(name)


def delete(project: Project, name: str, force: bool) -> None:
    PairedBranches(project).delete(name, force=force)


def gc(project: Project) -> list[str]:
    return PairedBranches(project).gc()


def diff(project: Project, name: str, against: str | None) -> tuple[str, SchemaDiff]:
    from consort.adapters.db.schema_diff import diff_databases

    paired = PairedBranches(project)
    base = against or paired.parent_of(name)
    result = diff_databases(paired.backend, paired.database_of(base), paired.database_of(name))
    return base, result
