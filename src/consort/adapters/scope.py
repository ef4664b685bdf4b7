"""Write scope: which files a turn changed, which of those it was not allowed to change, and undo.

A turn's scope is a list of `writable` globs, a list of `protected` globs and the exact paths of
its outputs. After the turn, every changed file is classified:

1. an output path of the turn is always allowed (outputs may live under `.consort/`);
2. otherwise a path matching a protected glob is a violation (protected wins over writable), and
   `.consort/**` is always protected: Consort's state is never an agent's to edit;
3. otherwise a path matching a writable glob is allowed;
4. anything else is a violation (outside the writable globs).

Changes are found with real git, against a *base* tree-ish: a commit, or better a `snapshot()`
taken just before the turn. A snapshot records the whole working tree as git sees it (tracked and
untracked files, not ignored ones) as a tree object without touching the index, HEAD or any
branch, so uncommitted work that was there before the turn is neither blamed on the agent nor
lost when the agent's out-of-scope changes are reverted. Ignored files (caches, build output,
`.env`, Consort's private `db/` folder) are not seen by git and so are not checked here.

Globs are matched against paths relative to the top of the working tree, with `/` separators,
and are anchored at that top (``pytest.ini`` is only the root one; write ``**/pytest.ini`` for
any depth): ``**`` as a whole segment matches any number of segments (zero included), ``*`` any
run of characters inside one segment, ``?`` one character, ``[...]`` a character class (``[!...]``
negated), and a trailing ``/`` means everything inside the folder.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from consort.adapters.vcs import read_blobs, sealed_git, tree_entries
from consort.core.errors import ConsortError
from consort.core.layout import STATE_GLOB

GIT_TIMEOUT_S = 300.0


# ---- globs -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """The regular expression equivalent to `pattern` (see the module docstring for the rules)."""
    text = pattern.strip()
    if not text.strip("/"):
        raise ValueError(f"empty glob pattern {pattern!r}")
    if text.endswith("/"):
        text += "**"
    segments = [segment for segment in text.split("/") if segment]
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            # Trailing: everything below. Leading or inner: zero or more whole segments.
            parts.append(".*" if last else "(?:[^/]+/)*")
        else:
            parts.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(parts), re.DOTALL)


def glob_match(pattern: str, path: str) -> bool:
    """Whether the relative POSIX `path` matches `pattern` as a whole."""
    return compile_glob(pattern).fullmatch(path.removeprefix("./")) is not None


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1  # "a**b" inside a segment is just "a*b"
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end, regex = _char_class(segment, i)
            if end is None:
                out.append(re.escape(char))
            else:
                out.append(regex)
                i = end
        elif char == "\\" and i + 1 < len(segment):
            i += 1
            out.append(re.escape(segment[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _char_class(segment: str, start: int) -> tuple[int | None, str]:
    """Parse `[...]` at `start`: (index of its closing bracket, regex), or (None, "") if open."""
    i = start + 1
    negated = i < len(segment) and segment[i] in "!^"
    if negated:
        i += 1
    body_start = i
    if i < len(segment) and segment[i] == "]":
        i += 1  # a "]" first in the class is a literal
    while i < len(segment) and segment[i] != "]":
        i += 1
    if i >= len(segment):
        return None, ""
    body = "".join("\\" + char if char in "\\^[]" else char for char in segment[body_start:i])
    # A class never matches the separator: paths are matched segment by segment.
    return i, f"[^/{body}]" if negated else f"(?!/)[{body}]"


# ---- scope -----------------------------------------------------------------------------------


class ChangeKind(StrEnum):
    MODIFIED = "modified"
    ADDED = "added"
    DELETED = "deleted"


class Breach(StrEnum):
    PROTECTED = "protected"  # matched a protected glob
    NOT_WRITABLE = "not-writable"  # matched no writable glob


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the top of the working tree, "/"-separated
    kind: ChangeKind


@dataclass(frozen=True)
class Violation:
    """A change the turn was not allowed to make (and that has been, or will be, reverted)."""

    path: str
    kind: ChangeKind
    breach: Breach
    rule: str  # the protected glob it matched, or the writable globs it matched none of

    def __str__(self) -> str:
        if self.breach is Breach.PROTECTED:
            return f"{self.path} {self.kind}: it is protected by `{self.rule}`"
        return f"{self.path} {self.kind}: it is outside the writable paths ({self.rule})"


@dataclass(frozen=True)
class WriteScope:
    writable: tuple[str, ...]
    protected: tuple[str, ...]
    # Exact relative paths the turn must write (its outputs): allowed even where protected.
    outputs: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        for pattern in (*self.writable, *self.protected):
            compile_glob(pattern)  # fail now, naming the pattern, rather than mid-check

    @property
    def all_protected(self) -> tuple[str, ...]:
        return self.protected if STATE_GLOB in self.protected else (*self.protected, STATE_GLOB)

    def breach_of(self, path: str) -> tuple[Breach, str] | None:
        """None when the turn may change `path`, else what it breaks and the rule."""
        if path in self.outputs:
            return None
        for pattern in self.all_protected:
            if glob_match(pattern, path):
                return Breach.PROTECTED, pattern
        if any(glob_match(pattern, path) for pattern in self.writable):
            return None
        return Breach.NOT_WRITABLE, ", ".join(self.writable) or "nothing is writable"

    def violations(self, changes: Iterable[FileChange]) -> list[Violation]:
        found = []
        for change in changes:
            breach = self.breach_of(change.path)
            if breach is not None:
                found.append(Violation(change.path, change.kind, *breach))
        return found


@dataclass(frozen=True)
class ScopeReport:
    changes: tuple[FileChange, ...]
    violations: tuple[Violation, ...]


# ---- git -------------------------------------------------------------------------------------


def snapshot(tree: Path) -> str:
    """The id of a git tree holding the working tree's current content; index and HEAD untouched.

    It covers tracked files (as they are on disk, staged or not) and untracked files that are not
    ignored. Use it as the `base` of the other functions, taken just before a turn starts.
    """
    return _snapshot_at(_toplevel(tree))


def _snapshot_at(top: Path) -> str:
    """`snapshot` of the working tree whose top folder is `top`."""
    with tempfile.TemporaryDirectory(prefix="consort-scope-") as scratch:
        # A fresh index, never a copy of the checkout's: its `assume-unchanged` and
        # `skip-worktree` flags would hide a changed file from `git add`.
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        sealed_git(top, "add", "-A", extra_env=env, timeout=GIT_TIMEOUT_S)
        return sealed_git(top, "write-tree", extra_env=env).stdout.strip()


def changed_files(tree: Path, base: str, *, exempt: Sequence[str] = ()) -> list[FileChange]:
    """Every file added, modified or deleted in the working tree since `base` (a tree-ish).

    Paths matching an `exempt` glob (Consort's own files written during the turn, such as the
    turn folder) are left out.
    """
    return _changed_at(_toplevel(tree), base, exempt)


def _changed_at(top: Path, base: str, exempt: Sequence[str]) -> list[FileChange]:
    """`changed_files` of the working tree whose top folder is `top`."""
    current = _snapshot_at(top)
    raw = sealed_git(
        top, "diff-tree", "-r", "-z", "--no-renames", "--raw", base, current, timeout=GIT_TIMEOUT_S
    ).stdout
    fields = raw.split("\0")
    changes: list[FileChange] = []
    # -z --raw: ":<mode> <mode> <sha> <sha> <status>" NUL "<path>" NUL, repeated.
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(":"):
            continue
        status = meta.split()[-1][:1]
        kind = {"A": ChangeKind.ADDED, "D": ChangeKind.DELETED}.get(status, ChangeKind.MODIFIED)
        if not any(glob_match(pattern, path) for pattern in exempt):
            changes.append(FileChange(path, kind))
    return changes


def check_scope(
    tree: Path, base: str, scope: WriteScope, *, exempt: Sequence[str] = ()
) -> ScopeReport:
    """What changed since `base` and which of those changes break `scope`; nothing is reverted."""
    changes = changed_files(tree, base, exempt=exempt)
    return ScopeReport(tuple(changes), tuple(scope.violations(changes)))


def enforce_scope(
    tree: Path, base: str, scope: WriteScope, *, exempt: Sequence[str] = ()
) -> ScopeReport:
    """`check_scope`, then put every violating path back as it was in `base`."""
    top = _toplevel(tree)  # asked once for both (each git process costs milliseconds)
    changes = _changed_at(top, base, exempt)
    report = ScopeReport(tuple(changes), tuple(scope.violations(changes)))
    _revert_at(top, base, report.violations)
    return report


def revert_outside_scope(
    tree: Path,
    base: str,
    writable: Sequence[str],
    protected: Sequence[str],
    *,
    outputs: Iterable[str] = (),
    exempt: Sequence[str] = (),
) -> list[Violation]:
    """Revert every change since `base` that the scope does not allow; return what was reverted.

    Modified and deleted files get their `base` content back; added files are deleted (and, if
    the agent staged them, removed from the index).
    """
    scope = WriteScope(tuple(writable), tuple(protected), frozenset(outputs))
    return list(enforce_scope(tree, base, scope, exempt=exempt).violations)


def revert(tree: Path, base: str, violations: Iterable[Violation]) -> None:
    _revert_at(_toplevel(tree), base, violations)


def _revert_at(top: Path, base: str, violations: Iterable[Violation]) -> None:
    added = sorted({v.path for v in violations if v.kind is ChangeKind.ADDED})
    restored = sorted({v.path for v in violations if v.kind is not ChangeKind.ADDED})
    # Deletions first: a file the agent put where a folder was must go before the folder's
    # files can come back (and the other way round).
    for relative in added:
        _remove(top, relative)
    if added:
        _git(top, "--literal-pathspecs", "rm", "-q", "--cached", "--ignore-unmatch", "--", *added)
    if restored:
        _write_from_tree(top, base, restored)


def _write_from_tree(top: Path, base: str, paths: list[str]) -> None:
    """Put each path back with its bytes in `base`, straight from git's objects: no checkout,
    so no smudge filter runs and no index flag (`skip-worktree`) gets in the way; nothing is
    staged."""
    entries = tree_entries(top, base)
    missing = [path for path in paths if path not in entries]
    if missing:
        raise ConsortError(f"could not restore {', '.join(missing)} in {top}: not in {base}")
    blobs = read_blobs(top, (entries[path].sha for path in paths))
    for path in paths:
        entry = entries[path]
        _real_folders_to(top, path)
        target = top / path
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.is_link:
            target.symlink_to(blobs[entry.sha].decode())
        else:
            target.write_bytes(blobs[entry.sha])
            target.chmod(0o755 if entry.mode == "100755" else 0o644)


def _real_folders_to(top: Path, relative: str) -> None:
    """Make every folder on the way to `relative` a real folder of the tree again, as `base`
    had it: one the agent replaced by a link (to the main checkout, to `.consort/`) would have
    Consort delete and write, outside the sandbox, the files of wherever it leads."""
    folder = top
    for part in Path(relative).parts[:-1]:
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            folder.unlink()
        if not folder.exists():
            folder.mkdir()


def _beyond_a_link(top: Path, relative: str) -> bool:
    folder = top
    for part in Path(relative).parts[:-1]:
        folder = folder / part
        if folder.is_symlink() or not folder.is_dir():
            return True
    return False


def _remove(top: Path, relative: str) -> None:
    if _beyond_a_link(top, relative):
        return  # not in the tree: what it names is elsewhere, and not the turn's to lose
    path = top / relative
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():  # a nested repository the agent created shows up as one entry
        shutil.rmtree(path)
    parent = path.parent
    while parent != top and parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
        parent = parent.parent


def _toplevel(tree: Path) -> Path:
    return Path(_git(tree, "rev-parse", "--show-toplevel"))


def _git(cwd: Path, *args: str) -> str:
    return sealed_git(cwd, *args, timeout=GIT_TIMEOUT_S).stdout.strip()


def relative_posix(path: Path, top: Path) -> str | None:
    """`path` relative to `top` with "/" separators, or None when it lies outside `top`."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(top)).as_posix()
    except ValueError:
        return None
