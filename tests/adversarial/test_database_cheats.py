"""The database cheats: a driver that changes history (applied migrations), builds the schema by
hand instead of by migration, never uses the throwaway database it was given, or has a migration
put there the data its test reads (rows, or SQL code that computes them).

The project keeps SQL migrations in migrations/versions/, applied by its own migrate.py; the run
database of every proof is a fresh child of the story's branch database, migrated by Consort.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.adversarial.store import start_store
from tests.adversarial.test_cheating_drivers import nothing_planted, reasons, seal_rules
from tests.helpers import MINI, TDD_AGENT, consort, events, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_build_lane import verify_ok

pytestmark = pytest.mark.integration

DB_AGENT = Path(__file__).parents[1] / "agents" / "db_agent.py"
MIGRATE = '''\
"""Apply migrations/versions/*.sql in order, each once."""
import os
import pathlib

import psycopg

with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY)")
    done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    for path in sorted(pathlib.Path("migrations/versions").glob("*.sql")):
        if path.name not in done:
            conn.execute(path.read_text())
            conn.execute("INSERT INTO schema_migrations VALUES (%s)", (path.name,))
'''
NOTES = "CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL CHECK (length(body) > 0));\n"


def configure(root: Path, driver: str) -> None:
    design = json.dumps([sys.executable, str(TDD_AGENT), str(MINI), "honest"])
    text = f"""
[test]
command = {json.dumps([sys.executable, "-m", "pytest", "-q"])}
timeout = 120
[migrate]
command = {json.dumps([sys.executable, "migrate.py"])}
[gates]
mode = "proxy"
[build]
repair_attempts = 0
[turns]
retries = 0
[agents]
default = "command"
command = {design}
[agents.navigator]
adapter = "command"
command = {json.dumps([sys.executable, str(DB_AGENT), "honest"])}
[agents.driver]
adapter = "command"
command = {json.dumps([sys.executable, str(DB_AGENT), driver])}
"""
    (root / "consort.toml").write_text(text)


@pytest.fixture(scope="module")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("dbcheats") / "store"
    try:
        # the branch databases are migrated by Consort from here on
        start_store(root, MIGRATE, {"0000_notes.sql": NOTES}, lambda r: configure(r, "noop"))
        result = consort("drive", cwd=root, timeout=600)
        assert result.returncode == 3, result.stdout + result.stderr  # the noop driver
        yield root
    finally:
        destroy_project_cluster(root)


def cheat(root: Path, mode: str) -> list[dict]:
    configure(root, mode)
    before = len(events(root))
    status = json.loads(ok(consort("status", "--json", cwd=root)))
    if status["escalations"]:
        ok(consort("retry", "F1", "--note", f"try {mode}", cwd=root))
    result = consort("drive", cwd=root, timeout=600)
    assert result.returncode == 3, result.stdout + result.stderr
    return events(root)[before:]


def story_tables(root: Path) -> set[str]:
    rows = json.loads(ok(consort("branch", "list", "--json", cwd=root)))
    story = next(r for r in rows if r["name"].startswith("story/"))
    url = ok(consort("db", "url", story["name"], cwd=root)).strip()
    with psycopg.connect(url) as conn:
        found = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
    return {row[0] for row in found}


@pytest.mark.parametrize(
    ("mode", "rule"),
    [
        ("edits-applied-migration", "migration-changed"),
        ("deletes-applied-migration", "migration-changed"),
        ("edits-migrate-script", "test-config-changed"),
        ("ignores-database", "database-unused"),
        # the data the test reads put there by a migration, not by the code
        ("migration-inserts-row", "migration-rows"),
        ("migration-do-block", "migration-rows"),
        ("migration-table-as-select", "migration-rows"),
        ("migration-constant-view", "migration-code"),
        ("migration-constant-function", "migration-code"),
        # values the schema fills in, rows it hides, data kept outside every table
        ("migration-column-default", "migration-default"),
        ("migration-domain-default", "migration-default"),
        ("migration-generated-column", "migration-default"),
        ("migration-row-policy", "migration-code"),
        ("migration-role-setting", "migration-code"),
        ("migration-large-object", "migration-rows"),
        # values kept where no row counter sees them, read back by SQL decoded at run time
        ("migration-history-row", "migration-rows"),
        ("migration-comment", "migration-catalog"),
        ("migration-enum-label", "migration-catalog"),
    ],
)
def test_a_database_cheat_is_caught(lane: Path, mode: str, rule: str) -> None:
    new = cheat(lane, mode)
    assert rule in seal_rules(new), (seal_rules(new), reasons(new))
    assert not any(e["type"] == "green.verified" for e in new)
    verify_ok(lane)
    nothing_planted(lane)


def test_a_table_made_by_hand_does_not_reach_any_run(lane: Path) -> None:
    new = cheat(lane, "table-by-hand")
    assert "items" in reasons(new)  # the run's fresh child has no such table
    assert not any(e["type"] == "green.verified" for e in new)
    assert "items" not in story_tables(lane)  # the agent never held the branch database
    verify_ok(lane)


def test_the_honest_driver_then_completes_the_item(lane: Path) -> None:
    new = cheat_until_green(lane)
    green = next(e for e in new if e["type"] == "green.verified")
    assert green["data"]["run"]["sessions"] > 0
    assert green["data"]["run"]["canaries"]["holds"]


def cheat_until_green(root: Path) -> list[dict]:
    configure(root, "honest")
    before = len(events(root))
    ok(consort("retry", "F1", "--note", "do it properly", cwd=root))
    result = consort("drive", "--until", "build", cwd=root, timeout=600)
    assert result.returncode in (0, 3), result.stdout + result.stderr
    return events(root)[before:]
