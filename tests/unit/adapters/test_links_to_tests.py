"""A link beside the code that leads to the tests (a test file, a folder that holds one, the
project's root, through other links too) is refused: code that reads it reads the answers the
tests expect under a name no rule reads. Links between the code's own files pass."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from consort.adapters.tdd.seal import links_to_frozen_files
from consort.adapters.vcs import tree_entries
from consort.core.config import DEFAULT_CONFIG_TEXT, load_config
from consort.core.seal import SealRule


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def _commit(root: Path, links: dict[str, str]) -> str:
    for path, target in links.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / path)
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "links")
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "consort.toml").write_text(DEFAULT_CONFIG_TEXT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_t1.py").write_text("def test_answer():\n    assert 1 == 1\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "notes.md").write_text("notes\n")
    _git(tmp_path, "init", "-q")
    _commit(tmp_path, {})
    return tmp_path


def _refused(project: Path, links: dict[str, str]) -> set[str]:
    base = tree_entries(project, _git(project, "rev-parse", "HEAD"))
    head = tree_entries(project, _commit(project, links))
    config = load_config(project / "consort.toml")
    found = links_to_frozen_files(project, config, base, head)
    assert all(v.rule is SealRule.SYMLINK_ESCAPES for v in found)
    return {v.path for v in found}


@pytest.mark.parametrize(
    "links",
    [
        {"app/expected.md": "../tests/test_t1.py"},
        {"app/spec": "../tests"},
        {"app/root": ".."},
        {"app/a.md": "b.md", "app/b.md": "../tests/test_t1.py"},
        {"app/up": "..", "app/deep.md": "up/tests/test_t1.py"},
    ],
    ids=["to-a-test", "to-the-tests-folder", "to-the-root", "through-a-link", "through-a-folder"],
)
def test_a_link_to_the_tests_is_refused(project: Path, links: dict[str, str]) -> None:
    assert list(links)[-1] in _refused(project, links)


def test_a_link_between_the_codes_own_files_passes(project: Path) -> None:
    assert _refused(project, {"app/readme.md": "notes.md", "docs": "app"}) == set()
