"""The static checks over a range of commits, read straight from git objects.

The working tree is never looked at: the checks see exactly what was committed at `head`, so
they can be re-run later on the same commits and give the same answer.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path

from consort.adapters.scope import glob_match
from consort.adapters.smells.changes import (
    Expected,
    added_skip_markers,
    expected_values,
    hard_coded_answers,
)
from consort.adapters.smells.checks import check_source
from consort.adapters.smells.model import Smell
from consort.adapters.vcs import Git, TreeEntry, read_blobs, tree_entries


def find_smells(tree: Path, base: str, head: str, protected: Sequence[str]) -> list[Smell]:
    """Every smell in the Python files changed between the commits `base` and `head`.

    A file matching a `protected` glob is a test file; any other `.py` file is production code.
    Each changed file is checked as it is at `head` (files deleted by then are gone, nothing to
    check). Skip markers and hard-coded answers count only what `head` added over `base`.
    Expected values come from every test file at `head`, not only changed ones: in a GREEN
    change the tests are protected and do not change, yet they are what the code must not echo.
    Every file is read from git's objects in one batch.
    """
    changed = _changed_python_files(Git(tree), base, head)
    at_head, at_base = tree_entries(tree, head), tree_entries(tree, base)
    tests = [p for p in sorted(at_head) if p.endswith(".py") and is_test_path(p, protected)]
    wanted = [
        *(at_head[p] for p in {*changed, *tests} if p in at_head),
        *(at_base[p] for p in changed if p in at_base),
    ]
    blobs = read_blobs(tree, (e.sha for e in wanted if not e.is_gitlink))

    def read(entries: Mapping[str, TreeEntry], path: str) -> str | None:
        """The file's text; None when it does not exist there or is not text (undecodable
        bytes do not parse either: the test run will say so)."""
        entry = entries.get(path)
        if entry is None or entry.is_gitlink:
            return None
        try:
            text = blobs[entry.sha].decode("utf-8")
        except UnicodeDecodeError:
            return None
        return text.replace("\r\n", "\n").replace("\r", "\n")  # as a text-mode read has it

    smells: list[Smell] = []
    production: dict[str, str] = {}
    for path in changed:
        text = read(at_head, path)
        if text is None:
            continue
        is_test = is_test_path(path, protected)
        smells += check_source(path, text, is_test=is_test)
        if is_test:
            smells += added_skip_markers(path, text, read(at_base, path))
        else:
            production[path] = text
    if production:
        expected: dict[Hashable, Expected] = {}
        for path in tests:
            text = read(at_head, path)
            if text is not None:
                for key, where in expected_values(path, text).items():
                    expected.setdefault(key, where)
        for path, text in production.items():
            smells += hard_coded_answers(path, text, read(at_base, path), expected)
    return sorted(smells, key=lambda smell: (smell.path, smell.line, smell.kind.value))


def is_test_path(path: str, protected: Sequence[str]) -> bool:
    return any(glob_match(pattern, path) for pattern in protected)


def _changed_python_files(git: Git, base: str, head: str) -> list[str]:
    # --no-renames: a renamed file is checked under its new name whatever diff.renames says.
    output = git.run("diff", "--name-only", "--no-renames", "-z", base, head).stdout
    return [path for path in output.split("\0") if path.endswith(".py")]
