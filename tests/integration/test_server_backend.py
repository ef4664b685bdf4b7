"""backend = "postgres": the same branching on a server Consort does not run.

The server here is another project's embedded PostgreSQL, reached by URL with a role that may
create databases and roles — exactly what a shared team server gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from consort.adapters.db.cluster import SUPERUSER
from consort.adapters.db.secret import load_secret, password_for
from tests.helpers import consort, git, ok

pytestmark = pytest.mark.integration


def _server_url(project: Path) -> str:
    record = json.loads((project / ".consort" / "db" / "cluster.json").read_text())
    password = password_for(load_secret(project / ".consort" / "db"), SUPERUSER)
    return f"postgresql://{SUPERUSER}:{password}@127.0.0.1:{record['port']}/postgres"


def test_branching_on_a_server_given_by_url(project, tmp_path):
    url = _server_url(project)
    root = tmp_path / "teamapp"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "consort.toml").write_text('[db]\nbackend = "postgres"\nurl_env = "TEAM_PG_URL"\n')
    env = {"TEAM_PG_URL": url}
    out = ok(consort("init", str(root), cwd=tmp_path, env=env))
    assert "teamapp_main" in out
    assert not (root / ".consort" / "db" / "cluster.json").exists()  # no server of its own
    ok(consort("branch", "create", "feature/x", cwd=root, env=env))
    rows = {
        r["name"]: r for r in json.loads(ok(consort("branch", "list", "--json", cwd=root, env=env)))
    }
    assert rows["feature/x"]["database"].startswith("teamapp_feature_x_")
    assert rows["main"]["database"] == "teamapp_main"
    branch_url = ok(consort("db", "url", "feature/x", cwd=root, env=env)).strip()
    assert SUPERUSER not in branch_url and "TEAM" not in branch_url
    with psycopg.connect(branch_url) as conn:
        conn.execute("CREATE TABLE notes (id int PRIMARY KEY)")
    diff = ok(consort("branch", "diff", "feature/x", cwd=root, env=env))
    assert "notes" in diff
    # the secret URL never lands in .env
    assert url not in (root / ".env").read_text()
    ok(consort("branch", "delete", "feature/x", "--force", cwd=root, env=env))
    with psycopg.connect(url) as conn:
        names = {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}
    assert "teamapp_main" in names
    assert not any(n.startswith("teamapp_feature_x") for n in names)
    missing = consort("branch", "list", cwd=root, env={"TEAM_PG_URL": ""})
    assert missing.returncode == 2 and "TEAM_PG_URL" in missing.stderr
