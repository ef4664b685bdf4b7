"""A run's migrate command is left out where it would apply nothing: Consort migrated the
parent branch database itself, with the same migrations, and the run's child is at the
revisions that reached. A commit that adds a migration is migrated as before, and a parent
whose record Consort cannot trust (changed since, by hand) is migrated too.

Real parts: `consort init --template python-fastapi` (Alembic), the embedded PostgreSQL, the
sealed runner."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from consort.adapters.paired import PairedBranches
from consort.adapters.tdd.runner import migrate, run_suite
from consort.adapters.vcs import Git
from consort.core.project import Project
from tests.helpers import consort, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

MIGRATION = '''"""{name}"""

from alembic import op

revision = "{revision}"
down_revision = {down}


def upgrade() -> None:
    op.execute("CREATE TABLE {name} (id integer PRIMARY KEY)")


def downgrade() -> None:
    op.execute("DROP TABLE {name}")
'''


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "shop"
    try:
        ok(consort("init", str(root), "--template", "python-fastapi", cwd=tmp_path))
        config = (root / "consort.toml").read_text()
        python = json.dumps(sys.executable)
        (root / "consort.toml").write_text(config.replace('["python", "-m"', f'[{python}, "-m"'))
        _commit(root, {"consort.toml": (root / "consort.toml").read_text()}, "this interpreter")
        yield root
    finally:
        destroy_project_cluster(root)


def _commit(root: Path, files: dict[str, str], message: str) -> str:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git = Git(root)
    git.run("add", "-A")
    git.run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git.out("rev-parse", "HEAD")


def _migration(revision: str, down: str | None, name: str) -> dict[str, str]:
    text = MIGRATION.format(revision=revision, down=repr(down), name=name)
    return {f"migrations/versions/{revision}_{name}.py": text}


def _migrate_out(project: Project, run: str) -> str:
    return (project.layout.runs / run / "migrate.out").read_text()


def test_a_run_on_a_parent_consort_migrated_alike_starts_no_migrate_process(shop: Path) -> None:
    project = Project(shop)
    paired = PairedBranches(project)
    database = paired.names("main").database
    first = _commit(shop, _migration("0001", None, "items"), "items")
    migrate(project, shop, first, paired.url("main"), "main", record_in=paired.dbs)
    info = paired.dbs.get(database)
    assert info is not None and info.migrated is not None
    assert info.migrated["revisions"] == ["0001"]

    # the same migrations, other code and tests: the migrate command is left out
    same = _commit(shop, {"app/extra.py": "VALUE = 1\n"}, "code only")
    evidence, _ = run_suite(project, paired.dbs, shop, database, same, label="same")
    assert evidence.migrate_exit == 0
    assert evidence.migrate_seconds == 0
    assert _migrate_out(project, evidence.run).startswith("not run")

    # a migration added: it runs, and applies it
    added = _commit(shop, _migration("0002", "0001", "orders"), "orders")
    evidence, _ = run_suite(project, paired.dbs, shop, database, added, label="added")
    assert evidence.migrate_exit == 0
    assert not _migrate_out(project, evidence.run).startswith("not run")
    assert evidence.migrate_seconds > 0


def test_a_parent_migrated_by_hand_since_is_migrated_again(shop: Path) -> None:
    project = Project(shop)
    paired = PairedBranches(project)
    database = paired.names("main").database
    first = _commit(shop, _migration("0001", None, "items"), "items")
    migrate(project, shop, first, paired.url("main"), "main", record_in=paired.dbs)
    # a person moves the version table (as a downgrade by hand would): the record no longer holds
    with paired.dbs.backend.admin(database) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'elsewhere'")
    evidence, _ = run_suite(project, paired.dbs, shop, database, first, label="by-hand")
    assert not _migrate_out(project, evidence.run).startswith("not run")
    assert evidence.migrate_exit != 0  # Alembic cannot find 'elsewhere': it ran, and says so


def test_a_migration_that_fails_leaves_no_record(shop: Path) -> None:
    project = Project(shop)
    paired = PairedBranches(project)
    database = paired.names("main").database
    first = _commit(shop, _migration("0001", None, "items"), "items")
    migrate(project, shop, first, paired.url("main"), "main", record_in=paired.dbs)
    broken = _commit(shop, _migration("0002", "0001", "items"), "a table that exists already")
    with pytest.raises(Exception, match="migrations failed"):
        migrate(project, shop, broken, paired.url("main"), "main", record_in=paired.dbs)
    info = paired.dbs.get(database)
    assert info is not None and info.migrated is None
