"""Adopting an existing repository shaped like a real one: app, tests, pytest config and Alembic
migrations under `backend/`, settings read from POSTGRES_*, and a tracked `.env` pointing at a
developer's database. `consort init` adopts it without touching a tracked file, and one story is
built through command agents on the configuration init wrote."""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, consort, git, ok, pair_agent
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

MINI = FIXTURES / "mini"
SHAPE = FIXTURES / "adopt" / "project"


def _existing_repository(root: Path) -> bytes:
    shutil.copytree(SHAPE, root)
    (root / "dotenv").rename(root / ".env")
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", "app")
    return (root / ".env").read_bytes()


def _drive_with_agents(root: Path, *, name_interpreter: bool = True) -> None:
    """What a user adds to the consort.toml init wrote: proxy gates and the agents. The
    interpreter is this one (it has alembic and SQLAlchemy): named where init wrote `python`,
    or (`name_interpreter` False) left as `python`, for a PATH on which `python` is this one
    (`_python_on_path`), as a project's activated virtual environment does."""
    text = (root / "consort.toml").read_text()
    if name_interpreter:
        text = text.replace('["python", ', f"[{json.dumps(sys.executable)}, ")
    text = text.replace('mode = "interactive"', 'mode = "proxy"')
    agent = json.dumps(pair_agent("adopt", MINI))
    text += f'default = "command"\ncommand = {agent}\n'
    (root / "consort.toml").write_text(text)


def _python_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`python` on PATH is this interpreter, for every consort command the test runs."""
    folder = Path(sys.executable).parent
    assert (folder / "python").exists()
    monkeypatch.setenv("PATH", f"{folder}:{os.environ.get('PATH', '')}")


def test_a_backend_project_with_a_tracked_env_is_adopted_and_built(tmp_path, monkeypatch):
    """Built on the configuration init wrote, commands and all: only the agents and proxy
    gates are added."""
    _python_on_path(monkeypatch)
    root = tmp_path / "fullstack"
    env_before = _existing_repository(root)
    try:
        # its first migration creates uuid-ossp, which the embedded wheel lacks: init runs the
        # cluster on the machine's own PostgreSQL, which ships it, by itself
        result = consort("init", cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        said = result.stdout + result.stderr
        assert "the migrations create uuid-ossp, which the embedded PostgreSQL lacks" in " ".join(
            said.split()
        )
        assert ".env is tracked by git and stays untouched" in said
        # the tables it names are printed as written, not read as console markup
        assert "give them the run database's parts" in said and "[test.env] and" in said
        # what else the tracked .env sets, which no run will see, is named
        assert "the tracked .env also sets FASTAPI_ENV: no run reads a .env" in " ".join(
            said.split()
        )
        # the system PostgreSQL ships it: no warning that the cluster lacks it
        assert "need the extension" not in said and "uuid-ossp (backend/" not in said
        assert (root / ".env").read_bytes() == env_before
        config = tomllib.loads((root / "consort.toml").read_text())
        assert config["env"]["file"] == ".env.local" and config["db"]["binaries"] == "system"
        assert config["test"]["cwd"] == "backend" and config["migrate"]["cwd"] == "backend"
        assert config["migrate"]["command"] == ["python", "-m", "alembic", "upgrade", "head"]
        assert config["test"]["env"]["POSTGRES_SERVER"] == "{db.host}"
        assert config["migrate"]["env"]["POSTGRES_PASSWORD"] == "{db.password}"
        assert "**/tests/**" in config["build"]["protected"]
        assert "backend/tests/**" in config["build"]["protected"]  # pytest's testpaths
        assert "DATABASE_URL=postgresql://" in (root / ".env.local").read_text()
        assert git(root, "status", "--porcelain", "--", ".env") == ""
        # init changed no tracked file at all: its ignore lines live beside the user's
        assert git(root, "diff", "--name-only") == ""
        assert (root / ".gitignore").read_text() == "__pycache__/\n*.pyc\n"
        ignored = git(root, "status", "--porcelain", "--ignored")
        assert "!! .env.local" in ignored and "!! .consort/db/" in ignored

        _drive_with_agents(root, name_interpreter=False)
        assert '["python", "-m", "pytest"' in (root / "consort.toml").read_text()
        doctor = {c["name"]: c for c in json.loads(ok(consort("doctor", "--json", cwd=root)))}
        for name in ("test command", "migrate command", "migrations", "test collection"):
            assert doctor[name]["state"] == "ok", doctor[name]
        git(root, "add", "consort.toml", ".gitignore")
        git(root, "-c", "user.name=dev", "-c", "user.email=d@e", "commit", "-qm", "consort")
        ok(consort("intake", "feature", "--title", "Answers", cwd=root, input_text="Answers."))
        drive = consort("drive", "--until", "build", cwd=root, timeout=900)
        assert drive.returncode == 0, drive.stdout + drive.stderr
        events = [json.loads(line) for line in (root / ".consort/ledger.jsonl").open()]
        kinds = [e["type"] for e in events]
        assert kinds.count("red.verified") == 2 and kinds.count("green.verified") == 2
        assert "violation.recorded" not in kinds
        greens = [e["data"] for e in events if e["type"] == "green.verified"]
        # test ids are repository paths, though pytest ran from backend/
        passing = {t for g in greens for t in json.dumps(g).split('"') if "::" in t}
        assert "backend/tests/test_t2.py::test_double" in passing
        assert "backend/tests/test_users.py::test_a_user_is_stored" in passing
        # every run used its throwaway child: the developer's database (port 9) never answered
        runs = [e["data"] for e in events if e["type"] in ("red.verified", "green.verified")]
        assert runs
        assert (root / ".env").read_bytes() == env_before
        assert git(root, "status", "--porcelain", "--", ".env") == ""
        verify = consort("verify", cwd=root)
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        destroy_project_cluster(root)


def test_an_extension_the_embedded_postgresql_lacks_is_named_with_its_fix(tmp_path):
    root = tmp_path / "fullstack"
    _existing_repository(root)
    try:
        # kept on the embedded wheel by choice (by default init takes the system PostgreSQL)
        result = consort("init", "--db-binaries", "embedded", cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        said = " ".join((result.stdout + result.stderr).split())
        assert "the migrations create uuid-ossp (backend/alembic/versions/0001_users.py)" in said
        assert "--db-binaries system" in said
        # `python` is this interpreter's (it has pytest and alembic), as a project's venv would be
        on_path = {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
        doctor = json.loads(ok(consort("doctor", "--json", cwd=root, env=on_path)))
        extensions = next(c for c in doctor if c["name"] == "extensions")
        assert extensions["state"] == "fail" and "uuid-ossp" in extensions["detail"]
        protected = next(c for c in doctor if c["name"] == "protected tests")
        assert protected["state"] == "ok" and "all 1 test file(s)" in protected["detail"]
        commands = {c["name"]: c for c in doctor if c["name"].endswith(" command")}
        assert commands["test command"]["state"] == "ok", commands["test command"]
        assert "in backend/" in commands["test command"]["detail"]
        # the interpreter the command resolves to and the runner it imports, not Consort's own
        python = f"(Python {platform.python_version()}); pytest "
        assert python in commands["test command"]["detail"]
        assert commands["migrate command"]["state"] == "ok", commands["migrate command"]
        assert "in backend/" in commands["migrate command"]["detail"]
        assert "; alembic " in commands["migrate command"]["detail"]
        _drive_with_agents(root)
        git(root, "add", "consort.toml", ".gitignore")
        git(root, "-c", "user.name=dev", "-c", "user.email=d@e", "commit", "-qm", "consort")
        ok(consort("intake", "feature", "--title", "Answers", cwd=root, input_text="Answers."))
        drive = consort("drive", "--until", "build", cwd=root, timeout=900)
        out = " ".join((drive.stdout + drive.stderr).split())
        assert drive.returncode != 0, out
        assert "Traceback" not in drive.stderr
        assert 'the migrations need the extension(s) "uuid-ossp"' in out, out
    finally:
        destroy_project_cluster(root)


def test_a_committed_env_pointing_at_a_real_database_is_never_what_a_run_tests(tmp_path):
    """The developer's .env names a database that exists and answers (here: the main branch's
    own), and the suite's settings fall back to it: without the env tables init wrote, the run
    still never reaches it (.env files are left out of the export and hidden by the sandbox),
    so the run fails instead of testing, migrating and emptying the developer's database."""
    import re

    import psycopg

    from consort.adapters.tdd.runenv import DbParts

    root = tmp_path / "fullstack"
    _existing_repository(root)
    try:
        ok(consort("init", "--db-binaries", "system", cwd=root))
        url = re.search(r"^DATABASE_URL=(\S+)$", (root / ".env.local").read_text(), re.M)
        assert url is not None
        dev = DbParts.from_url(url.group(1))
        (root / ".env").write_text(
            f"POSTGRES_SERVER={dev.host}\nPOSTGRES_PORT={dev.port}\nPOSTGRES_USER={dev.user}\n"
            f"POSTGRES_PASSWORD={dev.password}\nPOSTGRES_DB={dev.name}\n"
        )
        text = (root / "consort.toml").read_text()
        text = re.sub(r"\n\[(test|migrate)\.env\]\n(?:[A-Z_]+ = .*\n)+", "\n", text)
        assert "{db.host}" not in text
        (root / "consort.toml").write_text(text)
        _drive_with_agents(root)
        git(root, "add", "-A")
        git(root, "-c", "user.name=dev", "-c", "user.email=d@e", "commit", "-qm", "dev db")
        ok(consort("intake", "feature", "--title", "Answers", cwd=root, input_text="Answers."))
        drive = consort("drive", "--until", "build", cwd=root, timeout=900)
        assert drive.returncode == 3, drive.stdout + drive.stderr
        kinds = [json.loads(line)["type"] for line in (root / ".consort/ledger.jsonl").open()]
        assert "red.verified" not in kinds and "green.verified" not in kinds
        with psycopg.connect(url.group(1)) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone()
        assert tables == (0,)  # the developer's database was never migrated
    finally:
        destroy_project_cluster(root)
