"""Putting back what a turn may not change never writes through a link the turn made.

A driver may write `app/**`; `app/sub/conftest.py` is protected. It replaces the folder
`app/sub` with a link to another checkout (the person's main one, hidden in its sandbox, is a
path like any other) holding a `conftest.py` of its own. The guard sees the protected file
deleted and puts it back, outside the sandbox: through the link, that deleted the other
checkout's file and wrote the frozen one in its place, and left the tree without it. Now the
folder is made a real folder again first, and nothing outside the tree is touched. Real git in
a temporary folder, the guard as every turn runs it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from consort.adapters.scope import WriteScope, enforce_scope, snapshot
from tests.helpers import git


def test_the_protected_file_comes_back_in_the_tree_and_nothing_elsewhere_changes(
    tmp_path: Path,
) -> None:
    tree, other = tmp_path / "story", tmp_path / "main-checkout"
    (tree / "app" / "sub").mkdir(parents=True)
    other.mkdir()
    (other / "conftest.py").write_text("the person's own\n")
    (tree / "app" / "sub" / "conftest.py").write_text("frozen at RED\n")
    (tree / "app" / "main.py").write_text("answer = 42\n")
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "red")
    base = snapshot(tree)

    # The turn: the folder becomes a link to the other checkout.
    shutil.rmtree(tree / "app" / "sub")
    (tree / "app" / "sub").symlink_to(other)

    report = enforce_scope(tree, base, WriteScope(("app/**",), ("**/conftest.py",)))

    assert [v.path for v in report.violations] == ["app/sub/conftest.py"]
    assert (other / "conftest.py").read_text() == "the person's own\n"
    assert sorted(p.name for p in other.iterdir()) == ["conftest.py"]
    restored = tree / "app" / "sub"
    assert restored.is_dir() and not restored.is_symlink()
    assert (restored / "conftest.py").read_text() == "frozen at RED\n"
