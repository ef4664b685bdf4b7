"""What the user's coding agent may reach through `consort mcp`: the database of the branch it
works on, or of a branch made from it, through that branch's own role.

Never a parent's: a root branch (one with no parent database, `main`) is every branch's parent,
and an ancestor of the checked-out branch is its parent, so both are refused, as is any branch
outside the checked-out branch's line of descent. Never the superuser's: the URL is always the
branch role's login, which opens that branch's database and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from consort.core.errors import UsageError
from consort.core.project import Project


@dataclass(frozen=True)
class BranchLogin:
    branch: str
    database: str
    url: str  # the branch role's login: a secret for the caller, never to be logged

    def as_json(self) -> dict[str, str]:
        return {"branch": self.branch, "database": self.database, "url": self.url}


def lineage(parents: dict[str, str | None], branch: str) -> list[str]:
    """`branch` and its ancestors, nearest first (a cycle in the records ends the walk)."""
    line = [branch]
    parent = parents.get(branch)
    while parent is not None and parent not in line:
        line.append(parent)
        parent = parents.get(parent)
    return line


def own_branch_login(project: Project, checkout: Path, branch: str | None = None) -> BranchLogin:
    """The login URL of `branch` (default: the one checked out at `checkout`), when it is the
    checked-out branch or made from it, and has a parent; otherwise a UsageError saying why."""
    from consort.adapters.branch_rows import Pairing
    from consort.adapters.paired import PairedBranches
    from consort.adapters.vcs import Git

    paired = PairedBranches(project)
    here = Git(checkout).current_branch()
    if here is None:
        raise UsageError(
            f"{checkout} has no branch checked out (HEAD is detached)",
            fix="check out the branch you work on",
        )
    name = here if branch is None else branch
    rows = {row.name: row for row in paired.rows()}
    row = rows.get(name)
    if row is None or row.pairing is not Pairing.PAIRED or row.database is None:
        raise UsageError(f"branch {name!r} has no database of its own", fix="see branch_list")
    parents = {row.name: row.parent for row in rows.values()}
    if row.parent is None:
        raise UsageError(
            f"{name!r} is a root branch: its database is the parent of every branch, and its "
            "credentials stay with Consort",
            fix="create a branch of your own (branch_create) and ask for its URL",
        )
    if here not in lineage(parents, name):
        why = (
            f"{name!r} is a parent of the checked-out branch {here!r}"
            if name in lineage(parents, here)
            else f"{name!r} was not made from the checked-out branch {here!r}"
        )
        raise UsageError(
            f"{why}: only the checked-out branch's database and those of branches made from it "
            "can be reached",
            fix=f"check out {name!r} to work on it",
        )
    paired.backend.ensure_running()
    return BranchLogin(name, row.database, paired.url(name))
