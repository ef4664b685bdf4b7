"""`Git.branches_and_current` answers what `branches` and `current_branch` answer, in one call."""

from __future__ import annotations

import subprocess
from pathlib import Path

from consort.adapters.vcs import Git


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@localhost", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def test_branches_and_the_checked_out_one(tmp_path: Path) -> None:
    git = Git.init(tmp_path)
    assert git.branches_and_current() == ([], "main")  # no commit yet: git lists no branch
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "first")
    _git(tmp_path, "branch", "story/F1/S1")
    _git(tmp_path, "checkout", "-q", "story/F1/S1")
    assert git.branches_and_current() == (["main", "story/F1/S1"], "story/F1/S1")
    assert git.branches_and_current() == (git.branches(), git.current_branch())
    _git(tmp_path, "checkout", "-q", "--detach")
    assert git.branches_and_current() == (["main", "story/F1/S1"], None)
