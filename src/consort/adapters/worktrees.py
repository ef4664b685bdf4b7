"""Consort's private worktrees after a crash: half-made ones removed, stale locks cleared.

A `kill -9` during `git worktree add` leaves a worktree that git still marks as being made (its
`locked` file says "initializing"), partly checked out; one during any other git command in a
worktree leaves its `index.lock`, and every later git command there fails. Consort's worktrees
live under `.consort/worktrees/` and only the writer (`consort drive`, holding the drive lock)
works in them, so with the lock held such remains are a crash's, never another process's work.
A worktree removed here is made again, from its branch, by the step that needs it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from consort.adapters.vcs import Git

BEING_MADE = "initializing"  # what `git worktree add` writes into `locked` until it is done
OWN_LIFECYCLE = "_"  # `_spikes/`, `_experiments/`: checkouts with a lifecycle (and lock) of their
# own, beside the features' (no feature id starts with "_"): never touched here


@dataclass(frozen=True)
class WorktreeRepair:
    path: Path
    what: str

    def describe(self) -> str:
        return f"{self.what}: {self.path}"


def repair_worktrees(root: Path, under: Path) -> list[WorktreeRepair]:
    """Remove half-made worktrees and stale index locks of the worktrees below `under`, and
    folders there that are no worktree at all. Call only while holding the drive lock."""
    if not under.is_dir():
        return []
    git = Git(root)
    repairs: list[WorktreeRepair] = []
    common = Path(git.out("rev-parse", "--path-format=absolute", "--git-common-dir"))
    base = under.resolve()
    for admin in _admin_dirs(common):
        path = _checkout_of(admin)
        if path is None or not _inside(path, base):
            continue
        locked = admin / "locked"
        if locked.is_file() and locked.read_text(errors="replace").strip() == BEING_MADE:
            git.run("worktree", "remove", "--force", "--force", str(path), check=False)
            shutil.rmtree(path, ignore_errors=True)
            shutil.rmtree(admin, ignore_errors=True)
            repairs.append(WorktreeRepair(path, "removed a half-made worktree"))
            continue
        index_lock = admin / "index.lock"
        if index_lock.is_file():
            index_lock.unlink(missing_ok=True)
            repairs.append(WorktreeRepair(path, "removed a stale index.lock of the worktree"))
    git.run("worktree", "prune")
    registered = {p for a in _admin_dirs(common) if (p := _checkout_of(a)) is not None}
    for folder in _checkout_folders(base):
        if folder not in registered:
            shutil.rmtree(folder, ignore_errors=True)
            repairs.append(WorktreeRepair(folder, "removed a folder that is no worktree"))
    return repairs


def _admin_dirs(common: Path) -> list[Path]:
    folder = common / "worktrees"
    return sorted(folder.glob("*")) if folder.is_dir() else []


def _checkout_of(admin: Path) -> Path | None:
    """The checkout a worktree's admin folder belongs to (its `gitdir` names `<checkout>/.git`)."""
    try:
        text = (admin / "gitdir").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return Path(text).parent.resolve() if text else None


def _checkout_folders(base: Path) -> list[Path]:
    """`<F>/<checkout>` folders below the worktrees folder."""
    found = []
    for feature in sorted(base.iterdir()):
        if not feature.is_dir() or feature.is_symlink() or feature.name.startswith(OWN_LIFECYCLE):
            continue
        found += [
            c.resolve() for c in sorted(feature.iterdir()) if c.is_dir() and not c.is_symlink()
        ]
    return found


def _inside(path: Path, base: Path) -> bool:
    """Whether `path` is a feature's checkout below `base`."""
    if not path.is_relative_to(base) or path == base:
        return False
    return not path.relative_to(base).parts[0].startswith(OWN_LIFECYCLE)
