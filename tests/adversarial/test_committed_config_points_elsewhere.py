"""An adopted backend whose committed settings point every run at a developer's database that
exists and answers (on the same server, with its own login), and whose consort.toml does not
map the run database to those settings: the suite, and perhaps the migrations, ignore the
DATABASE_URL Consort gives them. A run reaches only its throwaway child (its network is its
own, and Consort's gate to the server lets through that database alone): the developer's rows
survive, the run says what it tried to reach, and a run that never touched its child is never
a GREEN. Where the migrate command is refused, the run stops before the suite runs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from consort.adapters.db.cluster import SUPERUSER
from consort.adapters.db.secret import load_secret, password_for
from tests.helpers import consort, git, ok, pair_agent
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_adopt import MINI, _drive_with_agents, _existing_repository

pytestmark = pytest.mark.integration

DEVELOPER = ("developer", "developer-password", "devdb")
USERS = ("ada@example.com", "grace@example.com", "edsger@example.com")


def _superuser_url(root: Path) -> str:
    record = json.loads((root / ".consort" / "db" / "cluster.json").read_text())
    password = password_for(load_secret(root / ".consort" / "db"), SUPERUSER)
    return f"postgresql://{SUPERUSER}:{password}@127.0.0.1:{record['port']}/postgres"


def _developer_database(root: Path) -> tuple[str, int]:
    """A developer's own database beside the project's: migrated to the head the repository
    has, with rows of their own. Returns its URL and port."""
    user, password, name = DEVELOPER
    admin = _superuser_url(root)
    port = int(admin.rsplit(":", 1)[1].split("/")[0])
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {user} LOGIN PASSWORD '{password}'")
        conn.execute(f"CREATE DATABASE {name} OWNER {user}")
    url = f"postgresql://{user}:{password}@127.0.0.1:{port}/{name}"
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE alembic_version (version_num varchar(32) PRIMARY KEY)")
        conn.execute("INSERT INTO alembic_version VALUES ('0001')")
        conn.execute("CREATE TABLE users (id bigserial PRIMARY KEY, email text UNIQUE NOT NULL)")
        for email in USERS:
            conn.execute("INSERT INTO users (email) VALUES (%s)", (email,))
    return url, port


def _developer_rows(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT email FROM users ORDER BY id").fetchall()]


def _point_settings_at(root: Path, port: int) -> None:
    """The committed settings' defaults name the developer's database (no .env needed)."""
    settings = root / "backend" / "app" / "settings.py"
    user, password, name = DEVELOPER
    text = settings.read_text()
    for old, new in (
        ('setting("POSTGRES_USER", "postgres")', f'setting("POSTGRES_USER", "{user}")'),
        ('setting("POSTGRES_PASSWORD")', f'setting("POSTGRES_PASSWORD", "{password}")'),
        ('setting("POSTGRES_SERVER", "localhost")', 'setting("POSTGRES_SERVER", "127.0.0.1")'),
        ('setting("POSTGRES_PORT", "5432")', f'setting("POSTGRES_PORT", "{port}")'),
        ("setting('POSTGRES_DB', 'app')", f"setting('POSTGRES_DB', '{name}')"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    settings.write_text(text)


def _unmap(root: Path, tables: tuple[str, ...]) -> None:
    text = (root / "consort.toml").read_text()
    for table in tables:
        text, count = re.subn(rf"\n\[{table}\.env\]\n(?:[A-Z_]+ = .*\n)+", "\n", text)
        assert count == 1, table
    (root / "consort.toml").write_text(text)


def _events(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / ".consort/ledger.jsonl").open()]


@pytest.fixture
def adopted_elsewhere(tmp_path: Path) -> Iterator[tuple[Path, str, int]]:
    root = tmp_path / "fullstack"
    _existing_repository(root)
    try:
        ok(consort("init", "--db-binaries", "system", cwd=root))
        url, port = _developer_database(root)
        _point_settings_at(root, port)
        _drive_with_agents(root)
        text = (root / "consort.toml").read_text()
        text = text.replace("repair_attempts = 3", "repair_attempts = 0")
        agent = json.dumps(pair_agent("adopt", MINI))
        assert agent in text
        text = text.replace(agent, json.dumps(pair_agent("adopt", MINI, "unmapped")))
        (root / "consort.toml").write_text(text)
        yield root, url, port
    finally:
        destroy_project_cluster(root)


def _drive(root: Path) -> list[dict]:
    git(root, "add", "-A")
    git(root, "-c", "user.name=dev", "-c", "user.email=d@e", "commit", "-qm", "settings")
    ok(consort("intake", "feature", "--title", "Answers", cwd=root, input_text="Answers."))
    drive = consort("drive", "--until", "build", cwd=root, timeout=900)
    assert drive.returncode == 3, drive.stdout + drive.stderr
    assert "Traceback" not in drive.stderr
    return _events(root)


def _reasons(events: list[dict]) -> str:
    return json.dumps([e["data"] for e in events if e["type"].endswith((".failed", ".recorded"))])


def test_a_suite_that_ignores_database_url_is_never_green(adopted_elsewhere):
    """The migrations follow [migrate.env] to the throwaway child; the suite's settings do not
    (no [test.env]), so every test asks for the developer's database, and is refused."""
    root, url, _ = adopted_elsewhere
    _unmap(root, ("test",))
    events = _drive(root)
    kinds = [e["type"] for e in events]
    assert "green.verified" not in kinds, kinds
    # the run's network is its own: the developer's database, on the same server under its own
    # login, was refused at Consort's gate, so the suite's teardown never reached its rows
    assert _developer_rows(url) == list(USERS)
    rules = {e["data"].get("seal_rule") for e in events if e["type"] == "violation.recorded"}
    assert "database-unused" in rules, _reasons(events)
    assert "the test process tried to reach devdb as developer" in _reasons(events)
    assert "a run reaches only its throwaway database" in _reasons(events)
    verify = consort("verify", cwd=root)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_migrations_that_ignore_database_url_stop_the_run_before_the_suite(adopted_elsewhere):
    """Neither the migrations nor the suite get the run database: the migrate command asks for
    the developer's database, is refused at Consort's gate and fails, so the run stops there.
    The suite, whose teardown deletes every user, never runs, and nothing is verified."""
    root, url, _ = adopted_elsewhere
    _unmap(root, ("test", "migrate"))
    events = _drive(root)
    kinds = [e["type"] for e in events]
    assert "red.verified" not in kinds and "green.verified" not in kinds, kinds
    assert "the migrate command tried to reach devdb as developer" in _reasons(events)
    assert _developer_rows(url) == list(USERS)
    verify = consort("verify", cwd=root)
    assert verify.returncode == 0, verify.stdout + verify.stderr
