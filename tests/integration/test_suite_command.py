"""`consort test [BRANCH]`: a person runs the suite the way Consort does, on a throwaway copy of
the branch's database that is dropped afterwards; the branch's own database is left untouched."""

from __future__ import annotations

import json
import sys

import psycopg
import pytest

from tests.helpers import consort, env_url, git, ok

pytestmark = pytest.mark.integration

WRITES_A_ROW = """\
import os

import psycopg


def test_writes_into_its_database():
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        conn.execute("CREATE TABLE marks (note text)")
        conn.execute("INSERT INTO marks VALUES ('left by the suite')")
"""

FAILS = """\
def test_fails():
    assert 1 + 1 == 3
"""


def _commit(root, name: str, text: str) -> None:
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / name).write_text(text)
    git(root, "add", "-A")
    git(root, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", f"add {name}")


def _tables(root) -> set[str]:
    with psycopg.connect(env_url(root)) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {row[0] for row in rows.fetchall()}


def test_the_suite_runs_on_a_throwaway_copy_and_reports_by_consorts_rules(fresh_project):
    root = fresh_project
    config = (root / "consort.toml").read_text()
    config = config.replace('command = ["alembic", "upgrade", "head"]', "command = []")
    config = config.replace(
        'command = ["python", "-m", "pytest"]', f'command = ["{sys.executable}", "-m", "pytest"]'
    )
    (root / "consort.toml").write_text(config)
    _commit(root, "test_marks.py", WRITES_A_ROW)

    said = ok(consort("test", cwd=root))
    assert "the suite passes on main at" in said and "1 passed" in said
    assert "marks" not in _tables(root)  # the branch's own database never saw the test's writes

    outcome = json.loads(ok(consort("test", "main", "--json", cwd=root)))
    assert outcome["passed"] is True and outcome["counts"]["passed"] == 1
    assert (root / ".consort" / "runs" / outcome["run"] / "junit.xml").is_file()

    _commit(root, "test_fails.py", FAILS)
    (root / "tests" / "test_uncommitted.py").write_text(FAILS.replace("test_fails", "test_other"))
    failed = consort("test", cwd=root)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    shown = failed.stdout + failed.stderr
    assert "the suite does not pass on main" in shown
    assert "tests/test_fails.py::test_fails failed: assert (1 + 1) == 3" in shown
    assert "test_other" not in shown  # only the commit is tested

    missing = consort("test", "no-such-branch", cwd=root)
    assert missing.returncode == 2 and "no branch 'no-such-branch'" in missing.stderr
    assert not [line for line in git(root, "worktree", "list").splitlines()[1:]]
