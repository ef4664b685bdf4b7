"""`consort init`: new folders, existing repositories, folders inside repositories, re-runs."""

from __future__ import annotations

import pytest

from tests.helpers import consort, git, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration


def test_adopting_an_existing_repository_leaves_its_code_and_history_alone(tmp_path):
    root = tmp_path / "existing"
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    (root / "app.py").write_text("print('mine')\n")
    git(root, "add", "app.py")
    git(root, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "mine")
    try:
        first = consort("init", cwd=root)
        assert first.returncode == 0, first.stderr
        assert "review and commit" in first.stderr
        assert (root / "app.py").read_text() == "print('mine')\n"
        assert git(root, "log", "--format=%s") == "mine"  # no commit of ours
        assert git(root, "branch", "--show-current") == "trunk"
        assert (root / ".env").read_text().rstrip().endswith("/trunk")
        again = ok(consort("init", cwd=root))
        assert "already set up" in again
    finally:
        destroy_project_cluster(root)


def test_a_new_folder_inside_a_repository_becomes_its_own_repository(tmp_path):
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q")
    (outer / "code").mkdir()
    (outer / "code" / "x.py").write_text("")
    refused = consort("init", "code", cwd=outer)
    assert refused.returncode == 2 and "inside the git repository" in refused.stderr
    assert not (outer / "code" / "consort.toml").exists()
    inner = outer / "new-project"
    try:
        said = ok(consort("init", "new-project", cwd=outer))
        # The next useful steps: choose the agents, then describe a feature.
        assert "next (1): choose who plays the roles: in consort.toml, set [agents] default" in said
        assert "next (2): describe what to build: consort intake feature --file request.md" in said
        assert git(inner, "rev-parse", "--show-toplevel") == str(inner)
        assert git(inner, "log", "--format=%s") == "Set up Consort"
    finally:
        destroy_project_cluster(inner)
