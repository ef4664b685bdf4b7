"""Move a branch to a commit Consort made, then bring its checkout along: two steps a crash can
come between, each one safe to repeat.

Promote makes its merge commit from git objects alone (`merge-tree`, `commit-tree`), moves the
parent branch to it with a compare-and-swap `update-ref` (atomic: before it, nothing changed;
after it, the merge is on the branch), and only then writes the files the merge changed into the
checkout. A kill while those files are written leaves the branch ahead of its checkout; the next
`advance_checkout` finishes the job, writing only paths that hold either side's bytes, so that no
change of a person's is ever overwritten.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from consort.adapters import proc
from consort.adapters.vcs import Git, TreeEntry, sealed_git, tree_entries
from consort.core.errors import ConsortError, UsageError


@dataclass(frozen=True)
class Merged:
    tree: str
    commit: str


def merge_commit(git: Git, base: str, side: str, message: str) -> Merged:
    """The merge commit of `side` into `base`, made without touching any ref, index or file.
    A conflict is an error: Consort's merges never need a person to resolve them."""
    result = git.run("merge-tree", "--write-tree", "--no-messages", base, side, check=False)
    if not result.ok:
        raise ConsortError(
            f"merging {side[:10]} into {base[:10]} conflicts: "
            + " ".join(result.stdout.split()[1:6]),
            fix="resolve it on the feature branch, then `consort drive`",
        )
    tree = result.stdout.split()[0]
    commit = git.as_consort("commit-tree", tree, "-p", base, "-p", side, "-m", message)
    return Merged(tree, commit.stdout.strip())


def move_branch(git: Git, branch: str, to: str, expected: str, reason: str) -> None:
    """Point `branch` at `to` if it still points at `expected` (compare and swap)."""
    git.run("update-ref", "-m", reason, f"refs/heads/{branch}", to, expected)


def contains(git: Git, ancestor: str, descendant: str) -> bool:
    return git.run("merge-base", "--is-ancestor", ancestor, descendant, check=False).ok


def advance_checkout(root: Path, before: str, after: str) -> int:
    """Write into the checkout at `root` (whose branch now points at `after`) every path where
    `before` and `after` differ, as `after` has it, index included: the number of paths written.
    A file whose bytes are neither side's is someone's change, and stops it (nothing written)."""
    old = tree_entries(root, before)
    new = tree_entries(root, after)
    changed = sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))
    if not changed:
        return 0
    algorithm = sealed_git(root, "rev-parse", "--show-object-format").stdout.strip() or "sha1"
    foreign = [
        path
        for path in changed
        if _on_disk(root / path, algorithm) not in (_sha(old.get(path)), _sha(new.get(path)))
    ]
    if foreign:
        raise UsageError(
            f"{len(foreign)} file(s) of the checkout were changed by someone while Consort moved "
            f"it to {after[:10]}: " + ", ".join(foreign[:5]),
            fix="commit or stash those changes (`git stash`), then `consort drive`",
        )
    present = [p for p in changed if p in new]
    gone = [p for p in changed if p not in new]
    index_lock = Path(sealed_git(root, "rev-parse", "--git-path", "index.lock").stdout.strip())
    if not index_lock.is_absolute():
        index_lock = root / index_lock
    # The lock of a git command a crash killed would stop every later command here; one that a
    # live git process holds is that process's.
    if index_lock.exists() and not proc.processes_named("git", inside=root):
        index_lock.unlink(missing_ok=True)
    if present:
        _git_paths(root, ["checkout", after], present)
    if gone:
        _git_paths(root, ["rm", "-q", "--cached", "--ignore-unmatch"], gone)
        for path in gone:
            target = root / path
            if target.is_symlink() or target.is_file():
                target.unlink()
            _prune_empty(target.parent, root)
    return len(changed)


def _git_paths(root: Path, args: list[str], paths: list[str]) -> None:
    sealed_git(
        root,
        "--literal-pathspecs",
        *args,
        "--pathspec-from-file=-",
        "--pathspec-file-nul",
        input_text="\0".join(paths) + "\0",
    )


def _sha(entry: TreeEntry | None) -> str | None:
    return None if entry is None else entry.sha


def _on_disk(path: Path, algorithm: str) -> str | None:
    """The blob id git would give the file's bytes (a link's target), None when it is absent."""
    try:
        data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    digest = hashlib.new("sha256" if algorithm == "sha256" else "sha1")
    digest.update(f"blob {len(data)}\0".encode() + data)
    return digest.hexdigest()


def _prune_empty(folder: Path, root: Path) -> None:
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
