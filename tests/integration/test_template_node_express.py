"""`consort init --template node-express`: an Express + pg + Knex app tested with Vitest through
Consort's junit runner, its packages pinned in the template's package-lock.json (installed by
scripts/node-fixtures.sh, which .ci/run calls). One feature is driven through design, build,
deploy and promote with command agents: Knex migrates every throwaway child and, at promote,
the main branch's own database; the deploy lane starts the app and its /health answers."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from consort.templates import available
from tests.helpers import FIXTURES, consort, git, ok, pair_agent
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

PACKAGES = FIXTURES / "node" / "express"
TEMPLATE = Path(__file__).parents[2] / "src" / "consort" / "templates" / "node-express"


def test_the_installed_packages_are_the_templates_own():
    assert "node-express" in available()
    assert (PACKAGES / "node_modules" / ".bin" / "knex").exists(), "run scripts/node-fixtures.sh"
    for name in ("package.json", "package-lock.json"):
        assert (PACKAGES / name).read_bytes() == (TEMPLATE / name).read_bytes(), name


def _main_url(root: Path) -> str:
    for line in (root / ".env").read_text().splitlines():
        if line.startswith("DATABASE_URL="):
            return line.split("=", 1)[1]
    raise AssertionError("no DATABASE_URL in .env")


def test_a_node_express_project_is_built_deployed_and_promoted(tmp_path):
    root = tmp_path / "answers"
    try:
        ok(consort("init", "--template", "node-express", str(root), cwd=tmp_path))
        (root / "node_modules").symlink_to(PACKAGES / "node_modules")
        assert git(root, "status", "--porcelain", "--", "node_modules") == ""  # ignored
        suite = consort("test", cwd=root, timeout=600)
        assert suite.returncode == 0, suite.stdout + suite.stderr
        assert "1 passed" in suite.stdout
        text = (root / "consort.toml").read_text().replace('mode = "interactive"', 'mode = "proxy"')
        agent = json.dumps(pair_agent("express", FIXTURES / "mini"))
        (root / "consort.toml").write_text(text + f'default = "command"\ncommand = {agent}\n')
        git(root, "add", "consort.toml")
        git(root, "-c", "user.name=dev", "-c", "user.email=d@e", "commit", "-qm", "agents")
        ok(consort("intake", "feature", "--title", "Answers", cwd=root, input_text="Answers."))
        drive = consort("drive", cwd=root, timeout=1200)
        assert drive.returncode == 0, drive.stdout + drive.stderr
        events = [json.loads(line) for line in (root / ".consort/ledger.jsonl").open()]
        kinds = [e["type"] for e in events]
        assert kinds.count("red.verified") == 2 and kinds.count("green.verified") == 2
        assert "violation.recorded" not in kinds
        deployed = [e["data"] for e in events if e["type"] == "deploy.verified"]
        assert deployed and deployed[-1]["smoke"] == [{"path": "/health", "status": 200}]
        assert deployed[-1]["run"]["canaries"]["holds"]
        assert (
            "test/t2.test.js::POST /answers > stores the double" in deployed[-1]["run"]["passing"]
        )
        assert "feature.promoted" in kinds
        # promote migrated the main branch's own database with the feature's Knex migration
        with psycopg.connect(_main_url(root)) as conn:
            names = conn.execute("SELECT name FROM knex_migrations ORDER BY id").fetchall()
            assert names == [("0001_start.js",), ("0002_answers.js",)]
            assert conn.execute("SELECT to_regclass('answers')").fetchone() == ("answers",)
        verify = consort("verify", cwd=root)
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        destroy_project_cluster(root)
