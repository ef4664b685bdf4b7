"""Materialising a commit from git objects into a fresh folder where Consort runs it.

Every proof (RED, GREEN, REFACTOR, merge, deploy, promote) runs here, never in a checkout an
agent has touched: the files are the commit's blobs, written by Consort itself (no checkout, so
no smudge filter, no `export-ignore` attribute, no hook, no untracked or ignored file, no index
flag can change what runs). The folder is private (0700), lies outside the project, and is
removed afterwards.

A symlink whose target leads outside the export, or into `.git` or `.consort`, is not written:
it is reported as a violation and the run does not happen. Committed `.env` files are left out:
a run gets its database by environment. Dependency folders that are not in git (a virtual
environment, `node_modules`), declared in `[test] dependencies`, are linked in from the project
root; the turn sandbox keeps them read-only for agents.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from consort.adapters import proc
from consort.adapters.background import Background
from consort.adapters.sandbox.policy import is_env_file
from consort.adapters.vcs import TreeEntry, read_blobs, tree_entries
from consort.core.errors import ConsortError
from consort.core.seal import SealRule, SealViolation

FORBIDDEN_TOPS = (".git", ".consort")
EXPORT_PREFIX = "consort-run-"


@dataclass(frozen=True)
class Export:
    root: Path
    commit: str
    entries: Mapping[str, TreeEntry]
    violations: tuple[SealViolation, ...] = field(default=())

    def blob(self, path: str) -> str | None:
        entry = self.entries.get(path)
        return entry.sha if entry else None


@contextlib.contextmanager
def exported(
    repo: Path,
    commit: str,
    *,
    dependencies: Sequence[str] = (),
    project_root: Path | None = None,
) -> Iterator[Export]:
    """A fresh folder holding exactly `commit`'s files; removed when the block ends."""
    root = Path(tempfile.mkdtemp(prefix=f"{EXPORT_PREFIX}{proc.process_tag()}-"))
    try:
        entries = tree_entries(repo, commit)
        blobs = read_blobs(repo, (e.sha for e in entries.values() if not e.is_gitlink))
        violations = _materialise(root, entries, blobs)
        if project_root is not None:
            _link_dependencies(root, project_root, dependencies, entries)
        yield Export(root, commit, entries, tuple(violations))
    finally:
        _discard(root)


def _materialise(
    root: Path, entries: Mapping[str, TreeEntry], blobs: Mapping[str, bytes]
) -> list[SealViolation]:
    links: list[TreeEntry] = []
    for entry in entries.values():
        if is_env_file(entry.path.rsplit("/", 1)[-1]):
            # A committed `.env` points at a developer's database: a run gets its own
            # throwaway one by environment, never the one a file names.
            continue
        target = root / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.is_gitlink:
            target.mkdir(exist_ok=True)  # a submodule: its content is not this commit's
        elif entry.is_link:
            links.append(entry)
        else:
            target.write_bytes(blobs[entry.sha])
            if entry.mode == "100755":
                target.chmod(0o755)
    violations = []
    # Links last, each checked twice: by its text (no absolute target, no way out), then by
    # where it really leads once written (through other links).
    for entry in sorted(links, key=lambda e: e.path):
        text = blobs[entry.sha].decode("utf-8", errors="replace")
        problem = link_problem(entry.path, text)
        if problem is None:
            (root / entry.path).symlink_to(text)
            problem = _resolved_problem(root, entry.path)
            if problem is not None:
                (root / entry.path).unlink()
        if problem is not None:
            violations.append(SealViolation(SealRule.SYMLINK_ESCAPES, entry.path, problem))
    return violations


def link_problem(path: str, target: str) -> str | None:
    """Why a symlink at `path` (relative) with this `target` text is refused, or None."""
    if os.path.isabs(target):
        return f"the symlink points to the absolute path {target!r}, outside the repository"
    resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
    first = resolved.split(os.sep, 1)[0]
    if first == "..":
        return f"the symlink leads outside the repository ({target!r})"
    if first in FORBIDDEN_TOPS:
        return f"the symlink leads into {first}/ ({target!r})"
    return None


def _resolved_problem(root: Path, path: str) -> str | None:
    real = Path(os.path.realpath(root / path))
    real_root = Path(os.path.realpath(root))
    if real != real_root and real_root not in real.parents:
        return "the symlink leads outside the repository through other links"
    relative = real.relative_to(real_root).parts
    if relative and relative[0] in FORBIDDEN_TOPS:
        return f"the symlink leads into {relative[0]}/ through other links"
    return None


def _link_dependencies(
    root: Path, project_root: Path, dependencies: Sequence[str], entries: Mapping[str, TreeEntry]
) -> None:
    for name in dependencies:
        source = (project_root / name).resolve()
        target = root / name
        if name in entries or target.exists():
            raise ConsortError(
                f"test.dependencies in consort.toml lists {name!r}, but the commit has a file there"
            )
        if not source.exists():
            raise ConsortError(
                f"test.dependencies in consort.toml lists {name!r}, which does not exist"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source, target_is_directory=source.is_dir())


def remove_orphaned_exports() -> list[Path]:
    """Remove the exports of Consort processes that are no longer running (killed mid-run:
    their own cleanup never ran). The folder's name carries its maker's process tag."""
    removed = []
    for folder in sorted(Path(tempfile.gettempdir()).glob(f"{EXPORT_PREFIX}*")):
        tag = folder.name[len(EXPORT_PREFIX) :].split("-", 1)[0]
        if "." not in tag or proc.tag_alive(tag) or not folder.is_dir() or folder.is_symlink():
            continue
        if folder.stat().st_uid != os.getuid():
            continue
        _remove(folder)
        removed.append(folder)
    return removed


def _remove(root: Path) -> None:
    top = os.path.abspath(root)

    def writable_then_retry(function, path, _info):  # type: ignore[no-untyped-def]
        # Only what lies inside the export is made writable: the folder holding the export
        # itself (the temporary folder, /tmp) is never touched, and a root that another
        # process removed first is simply gone.
        if not os.path.lexists(path):
            return
        with contextlib.suppress(OSError):
            parent = os.path.dirname(os.path.abspath(path))
            if parent == top or parent.startswith(top + os.sep):
                os.chmod(parent, stat.S_IRWXU)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IRWXU)
        with contextlib.suppress(OSError):
            function(path)

    shutil.rmtree(root, onerror=writable_then_retry)


REMOVALS: Background[Path] = Background(_remove, name="consort-export-removals", timeout=120.0)
"""This process's export removals, off the run's path: removing an export's files takes tens of
milliseconds on a busy disk. `finish` waits until every one handed over is removed; it runs when
the interpreter exits. A removal that a `kill -9` cut short leaves a folder named with the dead
process's tag, which `remove_orphaned_exports` removes."""


def _discard(root: Path) -> None:
    """Rename `root` away at once (its name is gone when `exported` returns) and hand its
    removal to `REMOVALS`."""
    trash = root.with_name(f"{root.name}-removed")
    try:
        os.rename(root, trash)
    except OSError:  # gone already, or it cannot be renamed: removed here
        _remove(root)
        return
    REMOVALS.submit(trash)
