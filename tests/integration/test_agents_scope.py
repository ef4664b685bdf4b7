"""Write-scope checking and reverting with real git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from consort.adapters.scope import (
    Breach,
    ChangeKind,
    FileChange,
    WriteScope,
    changed_files,
    check_scope,
    revert_outside_scope,
    snapshot,
)
from consort.adapters.vcs import Git

pytestmark = pytest.mark.integration


def git(tree: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=tree, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    tree = tmp_path / "repo"
    tree.mkdir()
    Git.init(tree)
    files = {
        "src/app.py": "def total():\n    return 0\n",
        "tests/test_app.py": "def test_total():\n    assert total() == 1\n",
        "pkg/conftest.py": "# fixtures\n",
        "README.md": "# Stockflow\n",
        ".consort/ledger.jsonl": '{"seq": 1}\n',
        ".gitignore": ".env\n",
        "tools/run.sh": "#!/bin/sh\necho run\n",
    }
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    Git(tree).commit_all("initial")
    # Uncommitted work that predates the turn: an untracked file and an unstaged edit.
    (tree / "notes.txt").write_text("my notes\n")
    (tree / "README.md").write_text("# Stockflow\nwork in progress\n")
    return tree


WRITABLE = ("src/**",)
PROTECTED = ("tests/**", "**/conftest.py")
OUTPUT = ".consort/features/F1/feature-spec.json"
TURN_FILES = (".consort/turns/**",)


def test_out_of_scope_changes_are_reverted_and_in_scope_ones_kept(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    base = snapshot(repo)
    assert git(repo, "status", "--porcelain") == " M README.md\n?? notes.txt\n"

    # --- what the agent does during its turn ---
    (repo / "src/app.py").write_text("def total():\n    return 1\n")  # allowed
    (repo / "src/new.py").write_text("X = 1\n")  # allowed
    (repo / "tests/test_app.py").write_text("def test_total():\n    assert True\n")
    (repo / "pkg/conftest.py").unlink()
    (repo / "scratch/deep").mkdir(parents=True)
    (repo / "scratch/deep/out.txt").write_text("junk")
    (repo / "README.md").unlink()
    (repo / "notes.txt").write_text("overwritten\n")
    (repo / ".consort/ledger.jsonl").write_text('{"seq": 1}\n{"forged": true}\n')
    (repo / ".consort/evil.json").write_text("{}")
    (repo / OUTPUT).parent.mkdir(parents=True)
    (repo / OUTPUT).write_text('{"id": "F1"}')  # its output: allowed
    (repo / "tests/test_new.py").write_text("def test_new(): pass\n")
    git(repo, "add", "tests/test_new.py")  # an agent staging a protected file
    (repo / "tools/run.sh").chmod(0o755)  # a mode change is a change
    # Consort's own turn record, written while the agent ran: exempt.
    (repo / ".consort/turns/0001-driver-green").mkdir(parents=True)
    (repo / ".consort/turns/0001-driver-green/stdout").write_text("log")
    (repo / ".env").write_text("DATABASE_URL=x\n")  # ignored by git: not seen

    violations = revert_outside_scope(
        repo, base, WRITABLE, PROTECTED, outputs=[OUTPUT], exempt=TURN_FILES
    )

    found = {(v.path, v.kind, v.breach, v.rule) for v in violations}
    assert found == {
        ("tests/test_app.py", ChangeKind.MODIFIED, Breach.PROTECTED, "tests/**"),
        ("tests/test_new.py", ChangeKind.ADDED, Breach.PROTECTED, "tests/**"),
        ("pkg/conftest.py", ChangeKind.DELETED, Breach.PROTECTED, "**/conftest.py"),
        ("scratch/deep/out.txt", ChangeKind.ADDED, Breach.NOT_WRITABLE, "src/**"),
        ("README.md", ChangeKind.DELETED, Breach.NOT_WRITABLE, "src/**"),
        ("notes.txt", ChangeKind.MODIFIED, Breach.NOT_WRITABLE, "src/**"),
        ("tools/run.sh", ChangeKind.MODIFIED, Breach.NOT_WRITABLE, "src/**"),
        (".consort/ledger.jsonl", ChangeKind.MODIFIED, Breach.PROTECTED, ".consort/**"),
        (".consort/evil.json", ChangeKind.ADDED, Breach.PROTECTED, ".consort/**"),
    }

    # Reverted: protected files restored, strays deleted, pre-turn work back as it was.
    assert (
        repo / "tests/test_app.py"
    ).read_text() == "def test_total():\n    assert total() == 1\n"
    assert (repo / "pkg/conftest.py").read_text() == "# fixtures\n"
    assert not (repo / "tests/test_new.py").exists()
    assert not (repo / "scratch").exists()  # emptied folders go too
    assert (repo / "README.md").read_text() == "# Stockflow\nwork in progress\n"
    assert (repo / "notes.txt").read_text() == "my notes\n"
    assert (repo / ".consort/ledger.jsonl").read_text() == '{"seq": 1}\n'
    assert not (repo / ".consort/evil.json").exists()
    assert not os.access(repo / "tools/run.sh", os.X_OK)
    # Kept: the turn's own work, its output, Consort's turn record, ignored files.
    assert (repo / "src/app.py").read_text() == "def total():\n    return 1\n"
    assert (repo / "src/new.py").exists()
    assert (repo / OUTPUT).read_text() == '{"id": "F1"}'
    assert (repo / ".consort/turns/0001-driver-green/stdout").read_text() == "log"
    assert (repo / ".env").exists()

    # git agrees: nothing staged, HEAD untouched, only in-scope changes remain.
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "ls-files", "tests") == "tests/test_app.py\n"
    remaining = changed_files(repo, base, exempt=TURN_FILES)
    assert sorted(remaining, key=lambda c: c.path) == [
        FileChange(OUTPUT, ChangeKind.ADDED),
        FileChange("src/app.py", ChangeKind.MODIFIED),
        FileChange("src/new.py", ChangeKind.ADDED),
    ]
    assert WriteScope(WRITABLE, PROTECTED, frozenset({OUTPUT})).violations(remaining) == []


def test_check_scope_reports_without_reverting(repo: Path) -> None:
    base = snapshot(repo)
    (repo / "tests/test_app.py").write_text("changed\n")
    (repo / "src/app.py").write_text("changed\n")
    report = check_scope(repo, base, WriteScope(WRITABLE, PROTECTED))
    assert {c.path for c in report.changes} == {"tests/test_app.py", "src/app.py"}
    assert [v.path for v in report.violations] == ["tests/test_app.py"]
    assert (repo / "tests/test_app.py").read_text() == "changed\n"


def test_a_commit_can_be_the_base(repo: Path) -> None:
    # Against the commit, the pre-turn untracked notes.txt and the README edit count as changes.
    changes = {(c.path, c.kind) for c in changed_files(repo, "HEAD")}
    assert changes == {("notes.txt", ChangeKind.ADDED), ("README.md", ChangeKind.MODIFIED)}
    violations = revert_outside_scope(repo, "HEAD", ("**",), PROTECTED)
    assert {v.path for v in violations} == set()
    (repo / "tests/test_app.py").write_text("changed\n")
    (violation,) = revert_outside_scope(repo, "HEAD", ("**",), PROTECTED)
    assert violation.path == "tests/test_app.py"
    assert git(repo, "status", "--porcelain") == " M README.md\n?? notes.txt\n"


def test_snapshot_leaves_index_and_head_alone(repo: Path) -> None:
    before = (git(repo, "status", "--porcelain"), git(repo, "rev-parse", "HEAD"))
    first = snapshot(repo)
    assert snapshot(repo) == first  # same content, same tree
    assert (git(repo, "status", "--porcelain"), git(repo, "rev-parse", "HEAD")) == before
    assert "notes.txt" in git(repo, "ls-tree", "-r", "--name-only", first)
    (repo / "src/app.py").write_text("other\n")
    assert snapshot(repo) != first


def test_a_file_replaced_by_a_folder_is_put_back(repo: Path) -> None:
    base = snapshot(repo)
    (repo / "README.md").unlink()
    (repo / "README.md").mkdir()
    (repo / "README.md/inner.txt").write_text("x")
    violations = revert_outside_scope(repo, base, WRITABLE, PROTECTED)
    assert {(v.path, v.kind) for v in violations} == {
        ("README.md", ChangeKind.DELETED),
        ("README.md/inner.txt", ChangeKind.ADDED),
    }
    assert (repo / "README.md").read_text() == "# Stockflow\nwork in progress\n"


def test_paths_that_look_like_pathspec_magic_are_taken_literally(repo: Path) -> None:
    # As a pathspec ":!x" means "everything but x"; restoring it must not touch anything else.
    (repo / ":!notes").write_text("original\n")
    (repo / "tests/[a]*.py").write_text("original\n")
    base = snapshot(repo)
    (repo / ":!notes").write_text("tampered\n")
    (repo / "tests/[a]*.py").write_text("tampered\n")
    (repo / "src/app.py").write_text("in scope\n")
    violations = revert_outside_scope(repo, base, WRITABLE, PROTECTED)
    assert {v.path for v in violations} == {":!notes", "tests/[a]*.py"}
    assert (repo / ":!notes").read_text() == "original\n"
    assert (repo / "tests/[a]*.py").read_text() == "original\n"
    assert (repo / "src/app.py").read_text() == "in scope\n"
