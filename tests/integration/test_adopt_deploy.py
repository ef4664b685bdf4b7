"""The deploy lane of an adopted backend project: the app lives in `backend/` and reads its
database from POSTGRES_* (falling back to a tracked `.env` naming a developer's database).
`[deploy] cwd` starts it from its folder and `[deploy.env]` maps the throwaway database's parts
to its variables. Without the mapping the smoke test fails (the app never sees the run's
database); with it, the deploy proof holds and the feature is promoted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers import consort, git, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_adopt import _drive_with_agents, _existing_repository

pytestmark = pytest.mark.integration

DEPLOY = (
    "\n[deploy]\n"
    f"command = {json.dumps([sys.executable, '-m', 'app.server', '{port}'])}\n"
    'cwd = "backend"\n'
    'smoke = ["/health"]\n'
)
DEPLOY_ENV = (
    "\n[deploy.env]\n"
    'POSTGRES_SERVER = "{db.host}"\n'
    'POSTGRES_PORT = "{db.port}"\n'
    'POSTGRES_USER = "{db.user}"\n'
    'POSTGRES_PASSWORD = "{db.password}"\n'
    'POSTGRES_DB = "{db.name}"\n'
    'FASTAPI_ENV = "production"\n'
)


def _events(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / ".consort/ledger.jsonl").open()]


def _commit_config(root: Path, text: str, message: str) -> None:
    (root / "consort.toml").write_text(text)
    git(root, "add", "consort.toml", ".gitignore")
    git(root, "-c", "user.name=dev", "-c", "user.email=d@e", "commit", "-qm", message)


def test_the_app_is_started_from_its_folder_with_the_run_database_mapped(tmp_path):
    root = tmp_path / "fullstack"
    env_before = _existing_repository(root)
    try:
        # the configuration init writes by default (it takes the system PostgreSQL for the
        # migrations' uuid-ossp), with the app's start command added: init cannot know it
        ok(consort("init", cwd=root))
        _drive_with_agents(root)
        configured = (root / "consort.toml").read_text()
        # [deploy] before the [agents] tables _drive_with_agents appended to
        head, agents = configured.split("\n[turns]\n", 1)
        _commit_config(root, head + DEPLOY + "\n[turns]\n" + agents, "deploy, unmapped")
        ok(consort("intake", "feature", "--title", "Answers", cwd=root, input_text="Answers."))
        drive = consort("drive", cwd=root, timeout=900)
        said = " ".join((drive.stdout + drive.stderr).split())
        assert drive.returncode != 0, said
        assert "Traceback" not in drive.stderr
        failed = [e["data"] for e in _events(root) if e["type"] == "deploy.failed"]
        assert failed and "GET /health answered 503" in json.dumps(failed[-1]), said

        _commit_config(root, head + DEPLOY + DEPLOY_ENV + "\n[turns]\n" + agents, "deploy, mapped")
        drive = consort("drive", cwd=root, timeout=900)
        assert drive.returncode == 0, drive.stdout + drive.stderr
        events = _events(root)
        verified = [e["data"] for e in events if e["type"] == "deploy.verified"]
        assert verified and verified[-1]["smoke"] == [{"path": "/health", "status": 200}]
        assert any(e["type"] == "feature.promoted" for e in events), [e["type"] for e in events]
        assert (root / ".env").read_bytes() == env_before
        verify = consort("verify", cwd=root)
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        destroy_project_cluster(root)
