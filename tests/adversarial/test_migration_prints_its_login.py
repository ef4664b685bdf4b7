"""A migration that prints the login it runs as and fails, only where Consort migrates a branch
database itself (the feature's, at a story's merge, with the feature's own login).

The driver (login_printing_driver.py) does honest work; its Python migration makes the table on
a run's throwaway child and, on the feature's database, prints its DATABASE_URL and the password
alone, and exits 1. The drive stops with the failed migration's output, and the ledger records
that message: the ledger is committed with the evidence, and every later turn reads git's
objects, so the feature's login would be there for any of them. Neither the drive's message
nor the ledger holds the password. Real project: the embedded PostgreSQL, real git, real
bubblewrap, the project's own migrate script.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adversarial.store import honest_agents_but_the_driver, start_store
from tests.helpers import MINI, TDD_AGENT, consort, events, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

DRIVER = Path(__file__).with_name("login_printing_driver.py")
MIGRATE = '''\
"""Apply migrations/versions/*.sql and *.py in order, each once."""
import os
import pathlib
import runpy

import psycopg

with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY)")
    done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    for path in sorted(pathlib.Path("migrations/versions").glob("*.*")):
        if path.name in done or path.suffix not in (".sql", ".py"):
            continue
        if path.suffix == ".sql":
            conn.execute(path.read_text())
        else:
            runpy.run_path(str(path))
        conn.execute("INSERT INTO schema_migrations VALUES (%s)", (path.name,))
'''


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The project after the drive that tried to merge its story; and that drive's output."""
    root = tmp_path_factory.mktemp("printed") / "store"
    try:
        driver = [sys.executable, str(DRIVER), str(TDD_AGENT), str(MINI)]
        start_store(root, MIGRATE, {}, honest_agents_but_the_driver(driver))
        drive = consort("drive", cwd=root, timeout=900)
        yield root, drive.stdout + drive.stderr + f"\nexit {drive.returncode}"
    finally:
        destroy_project_cluster(root)


def _feature_password(root: Path) -> str:
    url = ok(consort("db", "url", "feature/F1-store", cwd=root)).strip()
    return url.removeprefix("postgresql://").split("@")[0].split(":")[1]


def test_the_merge_stopped_on_the_failed_migration(merged: tuple[Path, str]) -> None:
    root, output = merged
    assert "the migrations failed on feature/F1-store: cannot reach postgresql://" in output
    assert not any(e["type"] == "story.merged" for e in events(root))


def test_neither_the_drive_nor_the_ledger_holds_the_feature_login(
    merged: tuple[Path, str],
) -> None:
    root, output = merged
    password = _feature_password(root)
    assert password not in output, output
    assert "***@127.0.0.1" in output and "(password ***)" in output, output
    ledger = (root / ".consort" / "ledger.jsonl").read_text()
    assert "cannot reach postgresql://" in ledger
    assert password not in ledger
