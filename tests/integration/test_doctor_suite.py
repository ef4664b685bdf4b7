"""`consort doctor` migrates and collects the project's suite on a throwaway child of the
current branch's database, the way Consort runs it, and drops the child afterwards."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import consort, git, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

MIGRATION = '''\
"""items"""

from alembic import op

revision = "0001_items"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL)")


def downgrade() -> None:
    op.execute("DROP TABLE items")
'''

MORE_TESTS = """\
import pytest


def test_one():
    assert 1


def test_two():
    assert 2


@pytest.mark.parametrize("n", [1, 2, 3])
def test_each(n):
    assert n
"""


@pytest.fixture
def fastapi_project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "app"
    try:
        ok(consort("init", "--template", "python-fastapi", str(root), cwd=tmp_path))
        # The commands run this interpreter (it has pytest, alembic and FastAPI), by path.
        config = root / "consort.toml"
        text = config.read_text().replace('["python", ', f"[{json.dumps(sys.executable)}, ")
        config.write_text(text)
        yield root
    finally:
        destroy_project_cluster(root)


def _migration(root: Path, text: str) -> None:
    versions = root / "migrations" / "versions"
    versions.mkdir(parents=True, exist_ok=True)
    (versions / "0001_items.py").write_text(text)


def _commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.name=dev", "-c", "user.email=d@e", "commit", "-qm", message)


def _doctor(root: Path) -> dict[str, dict[str, Any]]:
    result = consort("doctor", "--json", cwd=root, timeout=600)
    assert "Traceback" not in result.stderr, result.stderr
    return {c["name"]: c for c in json.loads(result.stdout)}


def _databases(root: Path) -> set[str]:
    from consort.adapters.db.backend import open_backend
    from consort.core.project import find_project

    with open_backend(find_project(root)).admin() as conn:
        return {row[0] for row in conn.execute("SELECT datname FROM pg_database").fetchall()}


def test_doctor_counts_the_collected_tests_and_names_the_migration_head(fastapi_project):
    root = fastapi_project
    _migration(root, MIGRATION)
    (root / "tests" / "test_more.py").write_text(MORE_TESTS)
    _commit(root, "items")
    before = _databases(root)
    checks = _doctor(root)
    # test_health's one test, test_one, test_two and three of test_each
    assert checks["test collection"]["state"] == "ok", checks["test collection"]
    assert "6 test(s) collected" in checks["test collection"]["detail"]
    assert checks["migrations"]["state"] == "ok", checks["migrations"]
    assert "alembic head 0001_items" in checks["migrations"]["detail"]
    # the interpreter the commands name and the runner and tool it imports, asked in the
    # run's sandbox
    test = checks["test command"]
    assert test["state"] == "ok" and f"{sys.executable} (Python " in test["detail"], test
    assert "runner pytest" in test["detail"] and "; pytest " in test["detail"], test
    migrate = checks["migrate command"]
    assert migrate["state"] == "ok" and "; alembic " in migrate["detail"], migrate
    assert _databases(root) == before


def test_a_command_whose_interpreter_lacks_its_runner_fails(fastapi_project):
    root = fastapi_project
    config = root / "consort.toml"
    text = config.read_text().replace('"-m", "pytest"', '"-m", "no_such_runner_here"')
    config.write_text(text)
    test = _doctor(root)["test command"]
    assert test["state"] == "fail", test
    assert "which has no module no_such_runner_here" in test["detail"]
    assert "fix: install no_such_runner_here for that interpreter" in test["detail"]


def test_a_broken_test_file_and_a_failing_migration_are_failures(fastapi_project):
    root = fastapi_project
    _migration(root, MIGRATION.replace("CREATE TABLE items", "CREATE TABLE no_such_schema.items"))
    (root / "tests" / "test_broken.py").write_text("def test_x(:\n    pass\n")
    _commit(root, "broken")
    before = _databases(root)
    checks = _doctor(root)
    collection = checks["test collection"]
    assert collection["state"] == "fail", collection
    assert "ERROR tests/test_broken.py: SyntaxError" in collection["detail"]
    assert "fix:" in collection["detail"]
    migrations = checks["migrations"]
    assert migrations["state"] == "fail", migrations
    assert "no_such_schema" in migrations["detail"] and "fix:" in migrations["detail"]
    assert _databases(root) == before


def test_a_stopped_server_is_not_started_and_the_suite_checks_say_why(fastapi_project):
    root = fastapi_project
    ok(consort("db", "stop", cwd=root))
    checks = _doctor(root)
    for name in ("test collection", "migrations"):
        assert checks[name]["state"] == "info", checks[name]
        assert "server is not running" in checks[name]["detail"]
    assert checks["database server"]["detail"].startswith("stopped")
    again = _doctor(root)
    assert again["database server"]["detail"].startswith("stopped")


def test_a_postgres_server_is_asked_its_version_and_one_that_does_not_answer_fails(
    project, tmp_path
):
    """backend = "postgres" on another project's embedded server, reached by URL."""
    from tests.integration.test_server_backend import _server_url

    root = tmp_path / "doctorapp"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "consort.toml").write_text('[db]\nbackend = "postgres"\nurl_env = "TEAM_PG_URL"\n')
    env = {"TEAM_PG_URL": _server_url(project)}
    ok(consort("init", str(root), cwd=tmp_path, env=env))
    result = consort("doctor", "--json", cwd=root, env=env)
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    server = checks["postgres server"]
    assert server["state"] == "ok", server
    assert server["detail"].startswith("answers: PostgreSQL 1")
    gone = {"TEAM_PG_URL": "postgresql://nobody:secret@127.0.0.1:1/postgres"}
    result = consort("doctor", "--json", cwd=root, env=gone)
    assert "Traceback" not in result.stderr, result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    server = checks["postgres server"]
    assert server["state"] == "fail" and "does not answer" in server["detail"], server
    assert "fix:" in server["detail"] and "secret" not in server["detail"]
    for name in ("test collection", "migrations"):
        if name in checks:
            assert checks[name]["state"] == "info", checks[name]
            assert "not checked" in checks[name]["detail"]


def test_a_migrate_command_that_never_connects_to_the_child_fails(fastapi_project):
    """A migrate command that exits 0 but migrates some other database (or none) is what stops
    a run before its suite; doctor says so too."""
    root = fastapi_project
    config = root / "consort.toml"
    text = config.read_text().replace(
        f'[{json.dumps(sys.executable)}, "-m", "alembic", "upgrade", "head"]',
        json.dumps([sys.executable, "-c", "print('migrated elsewhere')"]),
    )
    assert "print(" in text
    config.write_text(text)
    migrations = _doctor(root)["migrations"]
    assert migrations["state"] == "fail", migrations
    assert "never connected to the throwaway database" in migrations["detail"]
