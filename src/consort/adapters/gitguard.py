"""git's own machinery is Consort's: a turn may change none of it.

Before a turn Consort takes a fingerprint of the repository's machinery (its configuration,
`info/` with `attributes` and `exclude`, hooks, every worktree's HEAD and configuration) and of
every ref; afterwards, anything changed is put back as it was and reported: a hook planted for
Consort's next commit, a filter or fsmonitor in the configuration, an attributes file, a branch
moved with `git update-ref`. Objects, logs and index files are not machinery (adding objects
changes nothing a ref names; Consort never trusts an index).
"""

from __future__ import annotations

import os
import shutil
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
    return Machinery(git_dir, files, modes, _refs(repo))


def _refs(repo: Path) -> dict[str, str]:
    listing = sealed_git(repo, "for-each-ref", "--format=%(refname) %(objectname)").stdout
    return dict(line.split(" ", 1) for line in listing.splitlines() if line)


def restore(
    repo: Path, before: Machinery, *, others: frozenset[str] = frozenset()
) -> list[SealViolation]:
    """Put git's machinery back as `before` had it; what had changed, as violations.

    `others` are refs that Consort itself moves meanwhile for other work running in parallel
    (the sibling approaches of an experiment): they are left as they are now. Only sound when
    the agent cannot write refs at all (a sandboxed turn sees the git folder read-only)."""
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
            sealed_git(repo, "update-ref", "-d", ref)
        else:
            sealed_git(repo, "update-ref", "--no-deref", ref, old_sha)
    return found
