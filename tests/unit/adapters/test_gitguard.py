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
