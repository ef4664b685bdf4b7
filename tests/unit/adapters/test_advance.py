"""Promote's merge, made from objects, the branch moved by compare-and-swap, then the checkout
brought along: a checkout a crash left half-written is finished, and a file whose bytes are
neither side's (a person's change) stops it with nothing written. Real git in a temp folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from consort.adapters.advance import advance_checkout, contains, merge_commit, move_branch
from consort.adapters.vcs import Git
from consort.core.errors import ConsortError, UsageError


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _commit(root: Path, files: dict[str, str | None], message: str) -> str:
    for path, text in files.items():
        if text is None:
            (root / path).unlink()
        else:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", message)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    """main at `base`; branch `feature` at `side`, which changes, adds and deletes files."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    base = _commit(root, {"keep.txt": "kept\n", "old.txt": "old\n", "app/a.py": "a = 1\n"}, "base")
    _git(root, "checkout", "-q", "-b", "feature")
    side = _commit(
        root, {"app/a.py": "a = 2\n", "app/new/b.py": "b = 1\n", "old.txt": None}, "side"
    )
    _git(root, "checkout", "-q", "main")
    return root, base, side


def test_the_merge_moves_the_branch_then_its_checkout(repo: tuple[Path, str, str]) -> None:
    root, base, side = repo
    git = Git(root)
    merged = merge_commit(git, base, side, "Promote F1")
    assert _git(root, "rev-parse", "HEAD") == base  # nothing moved yet
    assert not contains(git, merged.commit, "HEAD")
    move_branch(git, "main", merged.commit, base, "promote")
    assert contains(git, merged.commit, "HEAD")
    assert (root / "app/a.py").read_text() == "a = 1\n"  # the files are not written yet
    assert advance_checkout(root, base, merged.commit) == 3
    assert (root / "app/a.py").read_text() == "a = 2\n"
    assert (root / "app/new/b.py").read_text() == "b = 1\n"
    assert not (root / "old.txt").exists()
    assert _git(root, "status", "--porcelain") == ""
    assert _git(root, "log", "-1", "--format=%s %P") == f"Promote F1 {base} {side}"


def test_a_half_written_checkout_is_finished(repo: tuple[Path, str, str]) -> None:
    root, base, side = repo
    git = Git(root)
    merged = merge_commit(git, base, side, "Promote F1")
    move_branch(git, "main", merged.commit, base, "promote")
    # what a kill in the middle leaves: one file written, git's lock left behind
    (root / "app/a.py").write_text("a = 2\n")
    (root / ".git" / "index.lock").write_text("")
    advance_checkout(root, base, merged.commit)
    assert _git(root, "status", "--porcelain") == ""
    assert not (root / ".git" / "index.lock").exists()


def test_a_persons_change_stops_it_and_nothing_is_written(repo: tuple[Path, str, str]) -> None:
    root, base, side = repo
    git = Git(root)
    merged = merge_commit(git, base, side, "Promote F1")
    move_branch(git, "main", merged.commit, base, "promote")
    (root / "app/a.py").write_text("a = 'mine'\n")
    with pytest.raises(UsageError, match=r"app/a\.py"):
        advance_checkout(root, base, merged.commit)
    assert (root / "app/a.py").read_text() == "a = 'mine'\n"
    assert (root / "old.txt").exists() and not (root / "app/new/b.py").exists()


def test_the_branch_moves_only_from_where_it_was(repo: tuple[Path, str, str]) -> None:
    root, base, side = repo
    git = Git(root)
    merged = merge_commit(git, base, side, "Promote F1")
    moved_on = _commit(root, {"keep.txt": "a person's commit\n"}, "elsewhere")
    with pytest.raises(ConsortError):
        move_branch(git, "main", merged.commit, base, "promote")
    assert _git(root, "rev-parse", "main") == moved_on


def test_a_conflict_is_an_error_not_a_merge(repo: tuple[Path, str, str]) -> None:
    root, _base, side = repo
    ours = _commit(root, {"app/a.py": "a = 3\n"}, "ours")
    with pytest.raises(ConsortError, match="conflicts"):
        merge_commit(Git(root), ours, side, "Promote F1")
