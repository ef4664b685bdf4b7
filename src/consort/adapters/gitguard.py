"""git's own machinery is Consort's: a turn may change none of it.

Before a turn Consort takes a fingerprint of the repository's machinery (its configuration,
`info/` with `attributes` and `exclude`, hooks, every worktree's HEAD and configuration) and of
every ref, and of every worktree's `.git` file (the pointer from a checkout to its git folder);
afterwards, anything changed is put back as it was and reported: a hook planted for Consort's
next commit, a filter or fsmonitor in the configuration, an attributes file, a branch moved with
`git update-ref`, a checkout pointed at a decoy repository. The second look is made in the git
folder the first one found, never asked of git through a checkout again: a `.git` file repointed
at a copy of the repository would have every comparison made in the copy. Objects, logs and
index files are not machinery (adding objects changes nothing a ref names; Consort never trusts
an index).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Container
from dataclasses import dataclass
from pathlib import Path

from consort.adapters.vcs import sealed_git
from consort.core.seal import SealRule, SealViolation

SKIPPED_TOP = frozenset({"objects", "logs", "refs", "lost-found", "rr-cache"})
SKIPPED_NAMES = frozenset(
    {"index", "COMMIT_EDITMSG", "ORIG_HEAD", "FETCH_HEAD", "AUTO_MERGE", "gc.log", "packed-refs"}
)
MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Machinery:
    git_dir: Path
    files: dict[str, bytes | None]  # relative path -> content (None: a symlink or too big)
    modes: dict[str, int]
    refs: dict[str, str]  # full ref name -> object id
    # each checkout's `.git` file (a worktree's pointer to its git folder) -> its bytes
    pointers: dict[Path, bytes | None]


def common_dir(repo: Path) -> Path:
    path = Path(sealed_git(repo, "rev-parse", "--git-common-dir").stdout.strip())
    return path if path.is_absolute() else (repo / path).resolve()


def fingerprint(repo: Path, git_dir: Path | None = None) -> Machinery:
    """The machinery of `repo`'s git folder (`git_dir`, when the caller knows it already)."""
    git_dir = common_dir(repo) if git_dir is None else git_dir
    files: dict[str, bytes | None] = {}
    modes: dict[str, int] = {}
    for folder, dirs, names in os.walk(git_dir):
        relative_folder = Path(folder).relative_to(git_dir)
        if relative_folder == Path("."):
            dirs[:] = [d for d in dirs if d not in SKIPPED_TOP]
        else:
            dirs[:] = [d for d in dirs if d != "logs"]
        for name in names:
            if name in SKIPPED_NAMES or name.endswith(".lock"):
                continue
            path = Path(folder) / name
            relative = str(relative_folder / name) if str(relative_folder) != "." else name
            info = path.lstat()
            modes[relative] = info.st_mode
            if path.is_symlink() or info.st_size > MAX_FILE_BYTES:
                files[relative] = None
            else:
                files[relative] = path.read_bytes()
    return Machinery(git_dir, files, modes, _refs(git_dir), _pointers(repo, git_dir))


def _in(git_dir: Path, *args: str) -> list[str]:
    """A git command run on `git_dir` itself, whatever a checkout's `.git` file says now."""
    return [f"--git-dir={git_dir}", *args]


def _refs(git_dir: Path) -> dict[str, str]:
    listing = sealed_git(
        git_dir, *_in(git_dir, "for-each-ref", "--format=%(refname) %(objectname)")
    ).stdout
    return dict(line.split(" ", 1) for line in listing.splitlines() if line)


def _pointers(repo: Path, git_dir: Path) -> dict[Path, bytes | None]:
    """The `.git` file of `repo` (when it is a worktree) and of every worktree of `git_dir`,
    by the checkout each worktree's admin folder names."""
    checkouts = [repo.absolute()]
    for admin in sorted((git_dir / "worktrees").glob("*")):
        try:
            named = (admin / "gitdir").read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if named:
            checkouts.append(Path(named).parent)
    found: dict[Path, bytes | None] = {}
    for checkout in dict.fromkeys(checkouts):
        dotgit = checkout / ".git"
        if dotgit.is_symlink() or dotgit.is_file():
            found[dotgit] = _pointer_bytes(dotgit)
    return found


def _pointer_bytes(dotgit: Path) -> bytes | None:
    if dotgit.is_symlink() or not dotgit.is_file():
        return None
    try:
        return dotgit.read_bytes()
    except OSError:
        return None


def restore(
    repo: Path, before: Machinery, *, others: Container[str] = frozenset()
) -> list[SealViolation]:
    """Put git's machinery back as `before` had it; what had changed, as violations.

    `others` are refs that Consort itself moves meanwhile for other work running in parallel
    (the sibling approaches of an experiment), or that a person may move (beside a spike's
    explorer): they are left as they are now. Only sound when the agent cannot write refs at
    all (a sandboxed turn sees the git folder read-only)."""
    # The folder found before the turn, not asked of git again: a turn that repointed the
    # worktree's `.git` file would otherwise have the comparison made elsewhere.
    after = fingerprint(repo, before.git_dir)
    found: list[SealViolation] = []
    for relative in sorted(before.files.keys() | after.files.keys()):
        old, new = before.files.get(relative, b"\0missing"), after.files.get(relative, b"\0missing")
        same_mode = before.modes.get(relative) == after.modes.get(relative)
        if old == new and same_mode:
            continue
        path = before.git_dir / relative
        found.append(
            SealViolation(
                SealRule.GIT_MACHINERY, f".git/{relative}", "git's machinery is no turn's"
            )
        )
        if relative not in before.files:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        elif old is not None:
            if path.is_symlink() or path.is_dir():
                shutil.rmtree(path) if path.is_dir() else path.unlink()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(old)
            os.chmod(path, before.modes[relative] & 0o7777)
    found += _restore_pointers(before)
    for ref in sorted(before.refs.keys() | after.refs.keys()):
        old_sha, new_sha = before.refs.get(ref), after.refs.get(ref)
        if old_sha == new_sha or ref in others:
            continue
        found.append(
            SealViolation(
                SealRule.REF_MOVED,
                ref,
                f"{ref} moved from {(old_sha or 'nothing')[:10]} to {(new_sha or 'nothing')[:10]}"
                ": refs are Consort's; it was put back",
            )
        )
        if old_sha is None:
            sealed_git(before.git_dir, *_in(before.git_dir, "update-ref", "-d", ref))
        else:
            sealed_git(
                before.git_dir, *_in(before.git_dir, "update-ref", "--no-deref", ref, old_sha)
            )
    return found


def _restore_pointers(before: Machinery) -> list[SealViolation]:
    """Every checkout's `.git` file as it was: a checkout left pointing at another repository
    would have Consort's next commit there, and every later read of the checkout."""
    found = []
    for dotgit, old in before.pointers.items():
        # A checkout removed meanwhile (a finished approach's, by Consort) is not repointed.
        gone = not (dotgit.exists() or dotgit.is_symlink())
        if old is None or gone or _pointer_bytes(dotgit) == old:
            continue
        found.append(
            SealViolation(
                SealRule.GIT_MACHINERY,
                str(dotgit),
                "a checkout's pointer to its git folder is git's machinery, no turn's; "
                "it was put back",
            )
        )
        if dotgit.is_dir() and not dotgit.is_symlink():
            shutil.rmtree(dotgit)
        else:
            dotgit.unlink(missing_ok=True)
        dotgit.write_bytes(old)
    return found
