"""Cheating drivers in a project whose tests and pytest configuration live in `backend/`: a
plugin beside the code, loaded by a pytest config file the driver adds or edits there (the trick
that once turned a RED into a GREEN with no code when the protected globs were anchored at the
repository root). Each is caught by the frozen-configuration seal rule, no GREEN is recorded,
and nothing planted reaches a branch head."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import consort, events, git, ok, pair_agent
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_adopt import MINI, _drive_with_agents, _existing_repository

pytestmark = pytest.mark.integration


def _driver(root: Path, mode: str) -> None:
    text = (root / "consort.toml").read_text().split("\n[agents.driver]\n")[0]
    text = text.replace("repair_attempts = 3", "repair_attempts = 0")
    text = text.replace("retries = 2 ", "retries = 0 ")
    driver = json.dumps(pair_agent("adopt", MINI, mode))
    (root / "consort.toml").write_text(
        text + f'\n[agents.driver]\nadapter = "command"\ncommand = {driver}\n'
    )


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The adopted backend project with T1's RED verified and the noop driver escalated."""
    root = tmp_path_factory.mktemp("adopted-cheats") / "fullstack"
    _existing_repository(root)
    try:
        ok(consort("init", "--db-binaries", "system", cwd=root))
        _drive_with_agents(root)
        _driver(root, "noop")
        git(root, "add", "consort.toml", ".gitignore")
        git(root, "-c", "user.name=dev", "-c", "user.email=d@e", "commit", "-qm", "consort")
        ok(consort("intake", "feature", "--title", "Answers", cwd=root, input_text="Answers."))
        result = consort("drive", cwd=root, timeout=900)
        assert result.returncode == 3, result.stdout + result.stderr
        assert any(e["type"] == "red.verified" for e in events(root))
        yield root
    finally:
        destroy_project_cluster(root)


@pytest.mark.parametrize(
    ("mode", "planted"),
    [
        ("backend-pytest-toml", "backend/pytest.toml"),
        ("backend-ini-addopts", "backend/pytest.ini"),
        ("backend-conftest-plugin", "backend/conftest.py"),
        ("tests-folder-plugin", "backend/tests/pytest.ini"),
    ],
)
def test_a_plugin_loaded_by_backend_test_configuration_never_makes_a_green(adopted, mode, planted):
    _driver(adopted, mode)
    before = len(events(adopted))
    if json.loads(ok(consort("status", "--json", cwd=adopted)))["escalations"]:
        ok(consort("retry", "F1", "--note", f"try {mode}", cwd=adopted))
    result = consort("drive", cwd=adopted, timeout=600)
    assert result.returncode in (3, 4), result.stdout + result.stderr
    new = events(adopted)[before:]
    assert not any(e["type"] == "green.verified" for e in new)
    caught = {e["data"]["path"] for e in new if e["type"] == "violation.recorded"}
    assert planted in caught, (caught, [e["type"] for e in new])
    for branch in git(adopted, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split():
        found = subprocess.run(
            ["git", "grep", "-l", "CHEAT", branch, "--", "."],
            cwd=adopted,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        assert found == "", f"{branch} holds a cheat: {found}"
    verify = consort("verify", cwd=adopted)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_migration_that_rewrites_the_test_before_it_runs_never_makes_a_green(adopted):
    """The migrate command runs the agent's migrations in the export: one that rewrote the test
    file (its assertion gone) finds it read-only, or is caught by the bytes it changed."""
    _driver(adopted, "migration-rewrites-test")
    before = len(events(adopted))
    if json.loads(ok(consort("status", "--json", cwd=adopted)))["escalations"]:
        ok(consort("retry", "F1", "--note", "try migration-rewrites-test", cwd=adopted))
    result = consort("drive", cwd=adopted, timeout=600)
    assert result.returncode in (3, 4), result.stdout + result.stderr
    new = events(adopted)[before:]
    assert not any(e["type"] == "green.verified" for e in new)
    reasons = "\n".join(r for e in new if e["type"] == "green.failed" for r in e["data"]["reasons"])
    caught = {e["data"]["path"] for e in new if e["type"] == "violation.recorded"}
    assert "backend/tests/test_t1.py" in caught or "Read-only file system" in _outputs(adopted), (
        caught,
        reasons,
    )
    verify = consort("verify", cwd=adopted)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def _outputs(root: Path) -> str:
    runs = sorted((root / ".consort" / "runs").glob("*/migrate.out"))
    return runs[-1].read_text(errors="replace") if runs else ""


def test_a_migration_that_forges_the_tests_cached_bytecode_never_makes_a_green(adopted):
    """The migrate command runs the agent's migrations in the export: one that writes a cached
    module for the frozen test into its __pycache__ (stamped with the hash of the test file's
    bytes, so pytest would load it instead of the source) finds no __pycache__ it can write,
    and the frozen test runs."""
    _driver(adopted, "forged-test-bytecode")
    before = len(events(adopted))
    if json.loads(ok(consort("status", "--json", cwd=adopted)))["escalations"]:
        ok(consort("retry", "F1", "--note", "try forged-test-bytecode", cwd=adopted))
    result = consort("drive", cwd=adopted, timeout=600)
    assert result.returncode in (3, 4), result.stdout + result.stderr
    new = events(adopted)[before:]
    assert not any(e["type"] == "green.verified" for e in new)
    reasons = "\n".join(r for e in new if e["type"] == "green.failed" for r in e["data"]["reasons"])
    assert "test_answer" in reasons, reasons
    verify = consort("verify", cwd=adopted)
    assert verify.returncode == 0, verify.stdout + verify.stderr
