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


def _names(url: str) -> tuple[set[str], set[str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        databases = {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}
        roles = {r[0] for r in conn.execute("SELECT rolname FROM pg_roles").fetchall()}
    return databases, roles


def test_db_destroy_drops_this_projects_objects_on_a_shared_server(project, tmp_path, monkeypatch):
    from consort.adapters.db.backend import open_backend
    from consort.adapters.db.branching import BranchDatabases
    from consort.core.project import Project

    url = _server_url(project)
    env = {"TEAM_PG_URL": url}
    # "teamapp_" is a prefix of "teamapp_x_": the names alone cannot tell the two apart.
    roots = {}
    for name in ("teamapp", "teamapp_x"):
        root = tmp_path / name
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        (root / "consort.toml").write_text('[db]\nbackend = "postgres"\nurl_env = "TEAM_PG_URL"\n')
        ok(consort("init", str(root), cwd=tmp_path, env=env))
        ok(consort("branch", "create", "feature/x", cwd=root, env=env))
        roots[name] = root
    with psycopg.connect(url, autocommit=True) as conn:  # someone else's, on the same server
        conn.execute("CREATE ROLE teamapp_reports_user LOGIN")
        conn.execute("CREATE DATABASE teamapp_reports")
        conn.execute("CREATE DATABASE billing")
    before_dbs, before_roles = _names(url)
    other_dbs = {d for d in before_dbs if d.startswith("teamapp_x_")}
    other_roles = {r for r in before_roles if r.startswith("teamapp_x_")}
    assert "teamapp_x_main" in other_dbs and "teamapp_x_main_user" in other_roles

    root = roots["teamapp"]
    refused = consort("db", "destroy", cwd=root, env=env)  # no terminal to confirm on
    assert refused.returncode == 2 and "--yes" in refused.stderr + refused.stdout
    assert _names(url)[0] == before_dbs

    monkeypatch.setenv("TEAM_PG_URL", url)
    dbs = BranchDatabases(open_backend(Project(root)))
    with dbs.ephemeral("teamapp_main") as child:
        session = psycopg.connect(child.url, autocommit=True)  # a session destroy must end
        out = ok(consort("db", "destroy", "--yes", cwd=root, env=env))
        assert session.closed or session.broken or _session_ended(session)
        session.close()
        assert f"database {child.database}" in out and f"role {child.role}" in out
    assert "database teamapp_main" in out and "role teamapp_main_user" in out
    password = url.split(":")[2].split("@")[0]
    assert password not in out and url not in out

    after_dbs, after_roles = _names(url)
    assert not {
        d for d in after_dbs if d.startswith("teamapp_") and not d.startswith("teamapp_x_")
    } - {"teamapp_reports"}
    assert not {
        r for r in after_roles if r.startswith("teamapp_") and not r.startswith("teamapp_x_")
    } - {"teamapp_reports_user"}
    assert other_dbs <= after_dbs and other_roles <= after_roles
    assert {"teamapp_reports", "billing", "postgres"} <= after_dbs
    assert {"teamapp_reports_user", SUPERUSER} <= after_roles
    # the other project still works
    ok(consort("branch", "list", cwd=roots["teamapp_x"], env=env))
    with psycopg.connect(
        ok(consort("db", "url", "main", cwd=roots["teamapp_x"], env=env)).strip()
    ) as conn:
        conn.execute("SELECT 1")

    again = ok(consort("db", "destroy", "--yes", cwd=root, env=env))
    assert "database " not in again and "role " not in again
    as_json = json.loads(ok(consort("db", "destroy", "--yes", "--json", cwd=root, env=env)))
    assert as_json == {"backend": "postgres", "cluster": None, "dropped": []}
    assert _names(url) == (after_dbs, after_roles)


def _session_ended(session: psycopg.Connection) -> bool:
    try:
        session.execute("SELECT 1")
    except psycopg.OperationalError:
        return True
    return False
