"""Which paths a turn must not change: its protected globs, and Consort's state, always.

Globs are relative to the turn's working tree (as in `adapters.scope`). A path is looked at twice:
as written (normalised, `..` resolved) and with symbolic links resolved, so that a link into
`tests/` does not open a way around `tests/**`. The turn's outputs are always allowed, even under
`.consort/`. Consort's state folder (the one holding the turn's task.json) is protected as a whole
too, except the turn's own working tree when it lies inside it: a story's worktree is
`.consort/worktrees/<F>/<S>`, its files are the agent's to change (within its globs), while the
state around it, other worktrees included, is not.

A command that acts on a whole folder (`rm -r`, `mv`, `git checkout <branch>`) is refused when
the folder holds a protected file, or when a protected glob names a place inside the folder.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from consort.adapters.guard.shell import WriteTarget
from consort.adapters.scope import glob_match
from consort.core.layout import STATE_GLOB

MAX_FILES_CHECKED = 20_000  # files walked under one folder before refusing to guess
_WILDCARDS = frozenset("*?[")
_SKIPPED = frozenset({".git"})


@dataclass(frozen=True)
class Breach:
    path: str  # as shown to the agent: relative to the tree when inside it
    rule: str  # the glob, or a sentence


@dataclass(frozen=True)
class GuardPolicy:
    tree: Path  # absolute, normalised
    protected: tuple[str, ...]  # globs relative to the tree; `.consort/**` included
    outputs: frozenset[str]  # absolute normalised paths the turn must write
    state_dir: Path | None = None  # Consort's state folder, protected as a whole

    @classmethod
    def build(
        cls,
        tree: Path,
        protected: Iterable[str],
        outputs: Iterable[Path],
        state_dir: Path | None = None,
    ) -> GuardPolicy:
        globs = tuple(protected)
        if STATE_GLOB not in globs:
            globs = (*globs, STATE_GLOB)
        allowed = set()
        for output in outputs:
            allowed.add(_normal(output))
            allowed.add(os.path.realpath(output))
        return cls(
            Path(_normal(tree)),
            globs,
            frozenset(allowed),
            None if state_dir is None else Path(_normal(state_dir)),
        )

    # ---- single files ----------------------------------------------------------------------

    def breach(self, path: str | Path, cwd: Path) -> Breach | None:
        """Why changing the file at `path` (absolute, or relative to `cwd`) is refused, or None."""
        absolute = _normal(Path(cwd) / path)
        if absolute in self.outputs or os.path.realpath(absolute) in self.outputs:
            return None
        for candidate in _candidates(absolute):
            found = self._file_breach(candidate)
            if found is not None:
                return found
        return None

    def _file_breach(self, absolute: str) -> Breach | None:
        if self._in_state_dir(absolute) and not self._in_tree(absolute):
            return Breach(
                _shown(absolute, self.tree), "Consort's state (never an agent's to change)"
            )
        for root in self._tree_roots():
            relative = _relative(absolute, root)
            if relative is None:
                continue
            for pattern in self.protected:
                if relative and glob_match(pattern, relative):
                    return Breach(relative, f"`{pattern}`")
        return None

    def _tree_roots(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((str(self.tree), os.path.realpath(self.tree))))

    def _in_tree(self, absolute: str) -> bool:
        return any(_relative(absolute, root) is not None for root in self._tree_roots())

    def _in_state_dir(self, absolute: str) -> bool:
        if self.state_dir is None:
            return False
        roots = (str(self.state_dir), os.path.realpath(self.state_dir))
        return any(_relative(absolute, root) is not None for root in roots)

    def _holds_state_dir(self, folder: str) -> bool:
        if self.state_dir is None:
            return False
        roots = (str(self.state_dir), os.path.realpath(self.state_dir))
        return any(_relative(root, folder) is not None for root in roots)

    # ---- command targets -------------------------------------------------------------------

    def target_breach(self, target: WriteTarget) -> Breach | None:
        absolute = _normal(target.cwd / target.path)
        if not target.recursive:
            return None if target.name_filter else self.breach(absolute, target.cwd)
        if target.name_filter is None:
            found = self.breach(absolute, target.cwd) or self._named_inside(absolute)
            if found is not None:
                return found
        return self._existing_inside(absolute, target.name_filter)

    def _named_inside(self, folder: str) -> Breach | None:
        """A protected glob whose fixed leading folders lie inside `folder` (or are it)."""
        for candidate in _candidates(folder):
            if self._holds_state_dir(candidate):
                return Breach(_shown(candidate, self.tree), "it holds Consort's state")
            for root in self._tree_roots():
                relative = _relative(candidate, root)
                if relative is None:
                    continue
                for pattern in self.protected:
                    prefix = _fixed_prefix(pattern)
                    if prefix and (
                        not relative or prefix == relative or prefix.startswith(f"{relative}/")
                    ):
                        return Breach(relative or ".", f"it holds paths protected by `{pattern}`")
        return None

    def _existing_inside(self, folder: str, name_filter: str | None) -> Breach | None:
        """A protected file that exists below `folder` (whose name matches `name_filter`)."""
        if not os.path.isdir(folder):
            return None
        seen = 0
        for current, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if d not in _SKIPPED]
            for name in [*files, *dirs]:
                seen += 1
                if seen > MAX_FILES_CHECKED:
                    return Breach(
                        _shown(folder, self.tree),
                        f"it holds more than {MAX_FILES_CHECKED} files, too many to check; "
                        "name the files instead",
                    )
                if name_filter is not None and not fnmatch.fnmatch(name, name_filter):
                    continue
                path = os.path.join(current, name)
                if path in self.outputs:
                    continue
                found = self._file_breach(path)
                if found is not None:
                    return Breach(found.path, found.rule)
        return None


def _normal(path: str | Path) -> str:
    return os.path.normpath(os.path.abspath(path))


def _candidates(absolute: str) -> list[str]:
    real = os.path.realpath(absolute)
    return [absolute] if real == absolute else [absolute, real]


def _relative(path: str, root: str) -> str | None:
    """`path` relative to `root` ("" for the root itself), or None when outside it."""
    if path == root:
        return ""
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _shown(path: str, tree: Path) -> str:
    relative = _relative(path, str(tree))
    return path if relative is None else (relative or ".")


def _fixed_prefix(pattern: str) -> str:
    """The leading segments of a glob without wildcards: `tests/**` -> `tests`."""
    fixed: list[str] = []
    for segment in pattern.strip().strip("/").split("/"):
        if any(char in _WILDCARDS for char in segment):
            break
        fixed.append(segment)
    return "/".join(fixed)
