"""Adopting a Node project tested with Vitest or Jest: `init` writes the JUnit runner profile,
and one story is built through command agents, Consort reading the runner's own JUnit report
(no pytest option reaches it) with its canary file in every run. Vitest, Jest and jest-junit
come from the npm registry, pinned, installed by scripts/node-fixtures.sh (which .ci/run
calls)."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, consort, git, ok, pair_agent
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

NODE = FIXTURES / "node" / "project"
JEST = FIXTURES / "node" / "jest-project"


def _adopted(fixture: Path, root: Path) -> None:
    shutil.copytree(fixture, root, ignore=shutil.ignore_patterns("node_modules"))
    (root / ".gitignore").write_text("node_modules\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-qm", "app")
    (root / "node_modules").symlink_to(fixture / "node_modules")


def _built_with(root: Path, runner: str) -> list[dict]:
    """One feature's story built by command agents; the ledger's events."""
    text = (root / "consort.toml").read_text().replace('mode = "interactive"', 'mode = "proxy"')
    agent = json.dumps(pair_agent("node", FIXTURES / "mini", runner))
    (root / "consort.toml").write_text(text + f'default = "command"\ncommand = {agent}\n')
    git(root, "add", "consort.toml", ".gitignore")
    git(root, "-c", "user.name=dev", "-c", "user.email=d@e", "commit", "-qm", "consort")
    ok(consort("intake", "feature", "--title", "Answers", cwd=root, input_text="Answers."))
    drive = consort("drive", "--until", "build", cwd=root, timeout=900)
    assert drive.returncode == 0, drive.stdout + drive.stderr
    return [json.loads(line) for line in (root / ".consort/ledger.jsonl").open()]


def test_a_vitest_project_is_adopted_and_built_on_its_junit_report(tmp_path):
    assert (NODE / "node_modules" / ".bin" / "vitest").exists(), "run scripts/node-fixtures.sh"
    root = tmp_path / "answers-node"
    _adopted(NODE, root)
    try:
        result = consort("init", cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        config = tomllib.loads((root / "consort.toml").read_text())
        assert config["test"]["runner"] == "junit"
        assert config["test"]["canary"] == "vitest"
        assert "--outputFile.junit={junit}" in config["test"]["command"]
        assert config["test"]["dependencies"] == ["node_modules"]
        assert "**/*.test.js" in config["build"]["protected"]
        events = _built_with(root, "vitest")
        kinds = [e["type"] for e in events]
        assert kinds.count("red.verified") == 2 and kinds.count("green.verified") == 2
        last_green = json.dumps([e["data"] for e in events if e["type"] == "green.verified"][-1])
        assert "test/t2.test.js::double > is 84" in last_green
        assert "test/existing.test.js::the project > has a test of its own" in last_green
        # Consort's Vitest canaries ran in every run and held; they are not in the test ids.
        assert '"holds": true' in last_green and '"nonce_seen": true' in last_green
        assert "consort_canary" not in last_green
        verify = consort("verify", cwd=root)
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        destroy_project_cluster(root)


def test_a_jest_project_is_adopted_and_built_on_jest_junits_report(tmp_path):
    assert (JEST / "node_modules" / ".bin" / "jest").exists(), "run scripts/node-fixtures.sh"
    root = tmp_path / "answers-jest"
    _adopted(JEST, root)
    try:
        result = consort("init", cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        config = tomllib.loads((root / "consort.toml").read_text())
        assert config["test"]["runner"] == "junit" and config["test"]["canary"] == "jest"
        assert "--reporters=jest-junit" in config["test"]["command"]
        assert config["test"]["env"]["JEST_JUNIT_OUTPUT_FILE"] == "{junit}"
        assert "**/jest.config.*" in config["build"]["protected"]
        events = _built_with(root, "jest")
        kinds = [e["type"] for e in events]
        assert kinds.count("red.verified") == 2 and kinds.count("green.verified") == 2
        # T2's RED was declared an error (a TypeError), T1's an assertion: jest-junit gives no
        # failure type, and both were read as declared.
        reds = [e["data"] for e in events if e["type"] == "red.verified"]
        assert any("test/t2.test.js::is 84" in json.dumps(r) for r in reds)
        last_green = json.dumps([e["data"] for e in events if e["type"] == "green.verified"][-1])
        assert "test/t1.test.js::is 42" in last_green
        assert "test/existing.test.js::has a test of its own" in last_green
        assert '"holds": true' in last_green and '"nonce_seen": true' in last_green
        assert "consort_canary" not in last_green
        verify = consort("verify", cwd=root)
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        destroy_project_cluster(root)
