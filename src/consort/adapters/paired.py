"""Paired branches: every git branch of the work with its own database, made and removed as one.

The git half and the database half are created together: if either fails, neither remains.
"""

from __future__ import annotations

from consort.adapters import branch_rows
from consort.adapters.branch_rows import BranchDatabase, BranchRow
from consort.adapters.db.backend import Backend, open_backend
from consort.adapters.db.branching import (
    BranchDatabases,
    DbInfo,
    DbKind,
    TemplateMode,
    inject_fault,
)
from consort.adapters.db.names import DbNames, map_branch
from consort.adapters.envfile import point_at_branch
from consort.adapters.vcs import Git
from consort.core.errors import ConsortError, UsageError
from consort.core.project import Project

ROOT_BRANCH = "main"


class PairedBranches:
    def __init__(self, project: Project, backend: Backend | None = None):
        self.project = project
        self.backend = backend or open_backend(project)
        self.git = Git(project.root)
        self.dbs = BranchDatabases(self.backend)

    def names(self, branch: str) -> DbNames:
        return map_branch(branch, self.backend.namespace)

    def url(self, branch: str) -> str:
        names = self.names(branch)
        return self.backend.login_url(names.database, names.role)

    # ---- commands ---------------------------------------------------------------------------

    def create_root(self, branch: str = ROOT_BRANCH) -> DbInfo:
        names = self.names(branch)
        existing = self.dbs.get(names.database)
        if existing is not None:
            return existing
        return self.dbs.create_root(branch, names.database, names.role)

    def create(
        self, name: str, parent: str | None = None, mode: TemplateMode = TemplateMode.DISCONNECT
    ) -> DbInfo:
        self.git.check_branch_name(name)
        names = self.names(name)
        parent = parent or self.git.current_branch()
        if parent is None:
            raise UsageError("HEAD is detached: say which branch to branch from", fix="--from NAME")
        if not self.git.branch_exists(parent):
            raise UsageError(
                f"parent branch {parent!r} does not exist", fix="see `consort branch list`"
            )
        if self.git.branch_exists(name):
            raise UsageError(
                f"branch {name!r} already exists", fix=f"`consort branch switch {name}`"
            )
        parent_db = self.names(parent).database
        if self.dbs.get(parent_db) is None:
            raise UsageError(
                f"parent branch {parent!r} has no database",
                fix=f"create one with `consort branch create {parent}` from its own parent",
            )
        if self.dbs.exists(names.database):
            raise UsageError(
                f"database {names.database!r} for {name!r} is left from an old branch",
                fix="run `consort branch gc`",
            )
        # A snapshot freezes the parent at its current commit: one per branch point, reused.
        point = self.git.out("rev-parse", parent) if mode is TemplateMode.SNAPSHOT else None
        info = self.dbs.create_branch(
            name, names.database, names.role, parent_db, mode=mode, point=point
        )
        try:
            inject_fault("branch-after-db")
            self.git.create_branch(name, parent)
        except BaseException:
            self.dbs.drop(names.database)
            raise
        return info

    def switch(self, name: str) -> None:
        if not self.git.branch_exists(name):
            raise UsageError(
                f"branch {name!r} does not exist", fix=f"`consort branch create {name}`"
            )
        self.git.switch(name)
        # The post-checkout hook does this too; doing it here keeps .env right without hooks.
        self.refresh_env(name)

    def refresh_env(self, branch: str | None) -> None:
        """Point the env file at `branch`'s database (never a file git tracks: that one is the
        user's, and stays as it is)."""
        root, name = self.project.root, self.project.env_file_name
        if branch is None:
            point_at_branch(root, name, None, "detached HEAD: no branch database")
            return
        try:
            names = self.names(branch)
        except UsageError:
            point_at_branch(root, name, None, f"{branch}: name cannot map to a database")
            return
        url = self.backend.login_url(names.database, names.role)
        point_at_branch(root, name, url, f"database of branch {branch}")

    def delete(self, name: str, *, force: bool = False) -> None:
        names = self.names(name)
        own = self.dbs.get(names.database)
        if own is not None and own.parent is None:
            raise UsageError(f"{name!r} is the root branch and cannot be deleted")
        if name == self.git.current_branch():
            raise UsageError(f"{name!r} is checked out", fix="switch to another branch first")
        children = [
            i.branch
            for i in self.dbs.infos()
            if i.kind is DbKind.BRANCH and i.parent == names.database
        ]
        if children and not force:
            raise UsageError(
                f"branch {name!r} has child branches: {', '.join(str(c) for c in children)}",
                fix="delete them first, or pass --force",
            )
        git_exists = self.git.branch_exists(name)
        db_exists = self.dbs.exists(names.database)
        if not git_exists and not db_exists:
            raise UsageError(f"branch {name!r} does not exist")
        if git_exists:
            self.git.delete_branch(name, force=force)
        if db_exists:
            self.dbs.drop(names.database)

    def rows(self) -> list[BranchRow]:
        """The branch table, read from the server now (and kept for `consort status`)."""
        listed = self.dbs.listing(sizes=True)
        infos = [i for i in listed if i.kind is DbKind.BRANCH and i.branch]
        by_db = {i.database: i.branch for i in infos}
        databases = [
            BranchDatabase(
                branch=str(i.branch),
                database=i.database,
                parent_branch=by_db.get(i.parent) if i.parent else None,
                created=i.created,
                oid=i.oid,
                size_bytes=i.size_bytes,
            )
            for i in infos
        ]
        names, current = self.git.branches_and_current()
        rows = branch_rows.branch_rows(names, current, databases)
        branch_rows.remember(self.project.state_dir, databases)
        return rows

    def gc(self) -> list[str]:
        return self.dbs.gc(set(self.git.branches()))

    def database_of(self, branch: str) -> str:
        names = self.names(branch)
        if not self.dbs.exists(names.database):
            raise UsageError(f"branch {branch!r} has no database", fix="see `consort branch list`")
        return names.database

    def parent_of(self, branch: str) -> str:
        info = self.dbs.get(self.database_of(branch))
        if info is None or info.parent is None:
            raise ConsortError(
                f"branch {branch!r} has no parent to compare with", fix="--against NAME"
            )
        parent_branch = next(
            (i.branch for i in self.dbs.infos() if i.database == info.parent and i.branch), None
        )
        if parent_branch is None:
            raise ConsortError(f"the parent of {branch!r} no longer exists", fix="--against NAME")
        return parent_branch
