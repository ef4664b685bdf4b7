"""What a crash left behind, found and removed: the first thing every `consort drive` does.

A `kill -9` of `drive` (or of its process group, or of the database server) skips every cleanup
Consort has: the throwaway child databases and their roles of the runs and turns in progress,
the half-built copy of a database and the parent it left refusing connections, the export a run
was executing in, the worktree git was making, git's `index.lock`, and the processes the drive
had started (test and migrate processes, the deploy lane's app, agents). Each is recognisable as
a dead process's: databases carry their maker's pid in their catalog comment or name, exports
their maker's process tag in their folder name, processes their owner's marker in their
environment (`proc.OWNER_VAR`). The next `drive`, holding the drive lock, removes them and says
what it removed; `consort branch gc` does the same (and drops the databases of deleted branches).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from consort.adapters import proc
from consort.adapters.tdd.export import remove_orphaned_exports
from consort.adapters.worktrees import repair_worktrees
from consort.core.errors import ConsortError
from consort.core.project import Project

if TYPE_CHECKING:
    from consort.adapters.db.backend import Backend


def collect_leftovers(
    project: Project,
    *,
    writer: bool,
    start_server: bool,
    branch_databases: bool = False,
) -> list[str]:
    """Remove what killed Consort processes left; one line per thing removed.

    `writer`: the caller holds the drive lock (worktrees are repaired only then). The database
    is collected in when its server runs, or after starting it with `start_server` (a crash may
    have stopped it). `branch_databases`: also drop the databases of branches git no longer has
    (`consort branch gc`).
    """
    lines = [f"stopped {orphan.describe()}" for orphan in proc.end_orphans(project.state_dir)]
    lines += [
        f"removed {folder} (the export of a killed run)" for folder in remove_orphaned_exports()
    ]
    if writer:
        lines += [r.describe() for r in repair_worktrees(project.root, project.layout.worktrees)]
    backend = _backend(project, start_server)
    if backend is not None:
        from consort.adapters.paired import PairedBranches

        paired = PairedBranches(project, backend)
        lines += [
            f"reopened {name} to connections (a copy of it was interrupted)"
            for name in paired.dbs.heal()
        ]
        live = set(paired.git.branches()) if branch_databases else None
        lines += [f"dropped {name}" for name in paired.dbs.gc(live)]
    return lines


def _backend(project: Project, start_server: bool) -> Backend | None:
    """The project's database server when it is to be collected in, else None."""
    from consort.adapters.db.backend import open_backend

    if start_server:
        return open_backend(project)
    try:
        backend = open_backend(project)
        return backend if backend.is_running() else None
    except ConsortError:
        return None  # no database set up (yet): nothing of it can be left over
