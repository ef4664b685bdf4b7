"""`gitguard.restore` compares git's machinery in the folder it fingerprinted before the turn."""

from __future__ import annotations

import subprocess
from pathlib import Path

from consort.adapters.gitguard import fingerprint, restore
from consort.core.seal import SealRule


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@localhost", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def test_a_hook_is_found_and_removed_though_the_worktree_was_repointed(tmp_path: Path) -> None:
    """The cheat: plant a hook for Consort's next commit, and point the worktree's `.git` file
    at a decoy repository, so that a second look asks git about the decoy and sees no hook."""
    repo, decoy, worktree = tmp_path / "repo", tmp_path / "decoy", tmp_path / "wt"
    for folder in (repo, decoy):
        folder.mkdir()
        _git(folder, "init", "-q", "-b", "main")
        _git(folder, "commit", "-q", "--allow-empty", "-m", "first")
    _git(repo, "worktree", "add", "-q", "-b", "story", str(worktree))
    before = fingerprint(worktree)
    hook = before.git_dir / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    (worktree / ".git").write_text(f"gitdir: {decoy / '.git'}\n")

    found = restore(worktree, before)

    assert ".git/hooks/pre-commit" in {v.path for v in found}
    assert all(v.rule is SealRule.GIT_MACHINERY for v in found if v.path.startswith(".git/"))
    assert not hook.exists()


def _sha(root: Path, ref: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", ref], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def _repo_with_worktree(tmp_path: Path) -> tuple[Path, Path]:
    repo, worktree = tmp_path / "repo", tmp_path / "wt"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    _git(repo, "worktree", "add", "-q", "-b", "story", str(worktree))
    return repo, worktree


def test_a_ref_moved_is_found_and_put_back_though_the_worktree_points_at_a_copy(
    tmp_path: Path,
) -> None:
    """The cheat: move the real story branch onto a commit of its own, and point the worktree's
    `.git` file at a copy of the repository taken before, whose refs are as they were: a ref
    check that asks git through the worktree would read the copy's refs and see nothing moved."""
    repo, worktree = _repo_with_worktree(tmp_path)
    before = fingerprint(worktree)
    start = _sha(repo, "refs/heads/story")
    decoy = tmp_path / "decoy.git"
    subprocess.run(["cp", "-a", str(repo / ".git"), str(decoy)], check=True)
    _git(worktree, "commit", "-q", "--allow-empty", "-m", "CHEAT")
    assert _sha(repo, "refs/heads/story") != start
    (worktree / ".git").write_text(f"gitdir: {decoy}\n")

    found = restore(worktree, before)

    assert "refs/heads/story" in {v.path for v in found if v.rule is SealRule.REF_MOVED}
    assert _sha(repo, "refs/heads/story") == start


def test_a_worktree_repointed_at_another_repository_is_pointed_back(tmp_path: Path) -> None:
    """A worktree's `.git` file is git's machinery too: left pointing at a decoy, Consort's
    next commit in that checkout, and every read of it, would go to the decoy."""
    repo, worktree = _repo_with_worktree(tmp_path)
    pointer = (worktree / ".git").read_bytes()
    before = fingerprint(repo)
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    _git(decoy, "init", "-q", "-b", "main")
    (worktree / ".git").write_text(f"gitdir: {decoy / '.git'}\n")

    found = restore(repo, before)

    assert any(v.rule is SealRule.GIT_MACHINERY and v.path.endswith("wt/.git") for v in found)
    assert (worktree / ".git").read_bytes() == pointer


def test_an_untouched_repository_has_nothing_to_put_back(tmp_path: Path) -> None:
    repo, worktree = _repo_with_worktree(tmp_path)
    before = fingerprint(repo)
    (worktree / "file.txt").write_text("work in the tree is not machinery\n")
    assert restore(repo, before) == []
