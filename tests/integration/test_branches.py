"""Paired branches against the real embedded server and real git."""

from __future__ import annotations

import json

import psycopg
import pytest

from tests.helpers import consort, env_url, git, ok

pytestmark = pytest.mark.integration


def _branches(project) -> dict[str, dict]:
    rows = json.loads(ok(consort("branch", "list", "--json", cwd=project)))
    return {row["name"]: row for row in rows}


def _databases(project) -> set[str]:
    url = ok(consort("db", "url", "main", cwd=project)).strip()
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT datname FROM pg_database").fetchall()
    return {r[0] for r in rows}


def test_init_made_main_with_its_database_and_env(project):
    rows = _branches(project)
    assert rows["main"]["pairing"] == "paired"
    assert rows["main"]["current"] is True
    url = env_url(project)
    assert url is not None and url.endswith("/main")
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("main_user",)


def test_create_copies_parent_data_and_switch_moves_env(project):
    with psycopg.connect(env_url(project)) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS stock (sku text PRIMARY KEY, qty int NOT NULL)")
        conn.execute("INSERT INTO stock VALUES ('A-1', 5) ON CONFLICT DO NOTHING")
    ok(consort("branch", "create", "feature/copy", cwd=project))
    rows = _branches(project)
    assert rows["feature/copy"]["pairing"] == "paired"
    assert rows["feature/copy"]["parent"] == "main"
    ok(consort("branch", "switch", "feature/copy", cwd=project))
    assert git(project, "branch", "--show-current") == "feature/copy"
    branch_url = env_url(project)
    assert branch_url is not None and "/feature_copy_" in branch_url
    with psycopg.connect(branch_url) as conn:
        assert conn.execute("SELECT qty FROM stock WHERE sku = 'A-1'").fetchone() == (5,)
        # The branch's role owns the copied tables: migrations on the branch can alter them.
        conn.execute("ALTER TABLE stock ADD COLUMN location text")
        conn.execute("UPDATE stock SET qty = 99")
    ok(consort("branch", "switch", "main", cwd=project))
    with psycopg.connect(env_url(project)) as conn:
        assert conn.execute("SELECT qty FROM stock WHERE sku = 'A-1'").fetchone() == (5,)
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'stock'"
        ).fetchall()
    assert ("location",) not in columns


def test_post_checkout_hook_follows_plain_git_checkout(project):
    ok(consort("branch", "create", "hooked", cwd=project))
    git(project, "checkout", "-q", "hooked")
    try:
        url = env_url(project)
        assert url is not None and url.endswith("/hooked")
        git(project, "checkout", "-q", "main")
        url = env_url(project)
        assert url is not None and url.endswith("/main")
    finally:
        git(project, "checkout", "-q", "main")


def test_branch_role_cannot_open_other_databases(project):
    ok(consort("branch", "create", "isolated", cwd=project))
    url = ok(consort("db", "url", "isolated", cwd=project)).strip()
    assert "consort_admin" not in url
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    for other in ("main", "postgres", "template1"):
        with pytest.raises(psycopg.OperationalError, match="permission denied"):
            psycopg.connect(url.rsplit("/", 1)[0] + "/" + other).close()
    main_url = ok(consort("db", "url", "main", cwd=project)).strip()
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(main_url.rsplit("/", 1)[0] + "/isolated").close()


def test_superuser_secret_never_reaches_env_or_output(project):
    env_text = (project / ".env").read_text()
    assert "consort_admin" not in env_text
    status = ok(consort("db", "status", "--json", cwd=project))
    assert "password" not in status.lower()


def test_branch_of_a_branch_and_delete(project):
    ok(consort("branch", "create", "parent-b", cwd=project))
    ok(consort("branch", "create", "child-b", "--from", "parent-b", cwd=project))
    assert _branches(project)["child-b"]["parent"] == "parent-b"
    refused = consort("branch", "delete", "parent-b", cwd=project)
    assert refused.returncode == 2 and "child branches" in refused.stderr
    ok(consort("branch", "delete", "child-b", "--force", cwd=project))
    ok(consort("branch", "delete", "parent-b", "--force", cwd=project))
    rows = _branches(project)
    assert "child-b" not in rows and "parent-b" not in rows
    assert not any(name.startswith(("child_b", "parent_b")) for name in _databases(project))


def test_injected_failure_in_create_leaves_nothing(project):
    before = _databases(project)
    for point in ("db-copied", "db-configured", "branch-after-db"):
        result = consort("branch", "create", "doomed", cwd=project, env={"CONSORT_FAULT": point})
        assert result.returncode == 1, result.stderr
        assert "injected failure" in result.stderr
        assert "doomed" not in git(project, "branch", "--list", "doomed")
        assert _databases(project) == before
    # and the name is still usable afterwards
    ok(consort("branch", "create", "doomed", cwd=project))
    ok(consort("branch", "delete", "doomed", "--force", cwd=project))


def test_gc_drops_databases_of_branches_deleted_with_git(project):
    ok(consort("branch", "create", "gone", cwd=project))
    git(project, "branch", "-D", "gone")
    assert _branches(project)["gone"]["pairing"] == "database only"
    out = ok(consort("branch", "gc", cwd=project))
    assert "dropped gone" in out
    assert "gone" not in _branches(project)


def test_bad_input_gives_one_line_and_exit_2(project):
    cases = [
        (("branch", "create", "bad..name"), "not a valid git branch name"),
        (("branch", "create", "main"), "already exists"),
        (("branch", "create", "x", "--from", "nope"), "does not exist"),
        (("branch", "switch", "nope"), "does not exist"),
        (("branch", "delete", "main"), "root branch"),
        (("branch", "create", "postgres"), "reserved"),
    ]
    for args, message in cases:
        result = consort(*args, cwd=project)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_outside_a_project_is_a_usage_error(tmp_path):
    result = consort("branch", "list", cwd=tmp_path)
    assert result.returncode == 2
    assert "consort init" in result.stderr


def test_diff_reports_schema_changes(project):
    ok(consort("branch", "create", "schema-work", cwd=project))
    url = ok(consort("db", "url", "schema-work", cwd=project)).strip()
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE locations (id int PRIMARY KEY, name text UNIQUE NOT NULL)")
    out = ok(consort("branch", "diff", "schema-work", cwd=project))
    assert "locations" in out
    data = json.loads(ok(consort("branch", "diff", "schema-work", "--json", cwd=project)))
    assert data["base"] == "main"
    assert any("locations" in change["table"] for change in data["changes"])
    same = ok(consort("branch", "diff", "main", "--against", "main", cwd=project))
    assert "no schema differences" in same


def test_switch_with_conflicting_uncommitted_work_is_refused_and_nothing_is_lost(project):
    ok(consort("branch", "create", "dirty-target", cwd=project))
    git(project, "checkout", "-q", "dirty-target")
    (project / "notes.txt").write_text("on the branch\n")
    git(project, "add", "notes.txt")
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "notes")
    git(project, "checkout", "-q", "main")
    (project / "notes.txt").write_text("my unsaved work\n")
    try:
        result = consort("branch", "switch", "dirty-target", cwd=project)
        assert result.returncode == 2
        assert "commit or stash" in result.stderr
        assert (project / "notes.txt").read_text() == "my unsaved work\n"
        assert git(project, "branch", "--show-current") == "main"
        assert env_url(project).endswith("/main")
    finally:
        (project / "notes.txt").unlink()
