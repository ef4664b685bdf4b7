"""Forging a `junit` runner's report (Vitest, and Jest with jest-junit, pinned from npm by
scripts/node-fixtures.sh).

The runner writes its JUnit XML into a file that the test process itself can write, so the
project's own code can rewrite it before Consort reads it: a config that, when the run ends,
turns every failure into a pass (a reporter that says all pass), or copies a committed junit.xml
over the report. Consort writes a canary test file of its own into the export (one test that
must pass, one that must fail with a fresh nonce): each forgery shows as a `canary-forged`
violation, and the honest run shows the canaries held and left out of the report."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from consort.adapters.paired import PairedBranches
from consort.adapters.tdd.runner import run_suite
from consort.app.init import NODE_PROFILES
from consort.core.project import Project
from consort.core.seal import SealRule
from tests.helpers import FIXTURES, consort, git, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

NODE = FIXTURES / "node" / "project"
JEST = FIXTURES / "node" / "jest-project"
VITEST = ["npx", "vitest", "run", "--configLoader=runner", "--reporter=default", "--reporter=junit"]

# Runs in Vitest's main process: when it exits, rewrite the report it wrote.
REWRITE_ON_EXIT = """\
import fs from "node:fs";
const flag = process.argv.find((a) => a.startsWith("--outputFile.junit="));
process.on("exit", () => {
  const report = flag.split("=")[1];
  %s
});
export default {};
"""
ALL_PASS = (
    'const xml = fs.readFileSync(report, "utf8");'
    'fs.writeFileSync(report, xml.replace(/<failure[\\s\\S]*?<\\/failure>/g, "")'
    '.replace(/failures="\\d+"/g, \'failures="0"\'));'
    "process.exitCode = 0;"
)
COMMITTED = 'fs.copyFileSync(new URL("./forged-junit.xml", import.meta.url), report);'
FORGED_REPORT = """\
<?xml version="1.0" encoding="UTF-8" ?>
<testsuites name="vitest tests" tests="2" failures="0" errors="0">
<testsuite name="test/existing.test.js" tests="2" failures="0" errors="0" skipped="0">
<testcase classname="test/existing.test.js" name="the project &gt; has a test of its own"/>
<testcase classname="test/existing.test.js" name="the project &gt; answers 42"/>
</testsuite></testsuites>
"""
FAILING_TEST = """\
import { expect, it } from "vitest";
import { answer } from "../src/answers.js";

it("answers 42", () => {
  expect(answer()).toBe(42);
});
"""


def _project(
    root: Path, fixture: Path, command: list[str], env: tuple[tuple[str, str], ...] = ()
) -> Path:
    ok(consort("init", str(root), cwd=root.parent))
    for name in ("package.json", "package-lock.json", "src", "test"):
        source = fixture / name
        copy = shutil.copytree if source.is_dir() else shutil.copy
        copy(source, root / name)
    (root / "node_modules").symlink_to(fixture / "node_modules")
    (root / ".gitignore").write_text((root / ".gitignore").read_text() + "node_modules\n")
    (root / "consort.toml").write_text(
        f'[test]\nrunner = "junit"\ncommand = {json.dumps(command)}\n'
        'dependencies = ["node_modules"]\n[migrate]\ncommand = []\n[test.env]\n'
        + "".join(f"{name} = {json.dumps(value)}\n" for name, value in env)
    )
    _commit(root, "node project")
    return root


@pytest.fixture(scope="module")
def node_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    assert (NODE / "node_modules" / ".bin" / "vitest").exists(), "run scripts/node-fixtures.sh"
    root = tmp_path_factory.mktemp("forgery") / "answers"
    try:
        command = [*VITEST, "--outputFile.junit={junit}"]
        yield _project(root, NODE, command)
    finally:
        destroy_project_cluster(root)


@pytest.fixture(scope="module")
def jest_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The same, run by Jest through init's profile (jest-junit, its settings by environment)."""
    assert (JEST / "node_modules" / ".bin" / "jest").exists(), "run scripts/node-fixtures.sh"
    root = tmp_path_factory.mktemp("forgery-jest") / "answers"
    command, env = NODE_PROFILES["jest"]
    try:
        yield _project(root, JEST, list(command), env)
    finally:
        destroy_project_cluster(root)


def _commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD")


def _run(root: Path, files: dict[str, str], branch: str):
    git(root, "checkout", "-q", "-B", branch, "main")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    head = _commit(root, branch)
    git(root, "checkout", "-q", "main")
    project = Project(root)
    paired = PairedBranches(project)
    return run_suite(project, paired.dbs, root, paired.names("main").database, head, label=branch)


def test_an_honest_vitest_run_shows_its_canaries_held_and_leaves_them_out(node_project):
    evidence, report = _run(node_project, {"test/answer.test.js": FAILING_TEST}, "honest")
    assert evidence.violations == (), evidence.problems
    assert evidence.canaries is not None and evidence.canaries["holds"]
    assert report is not None
    assert report.passed() == {"test/existing.test.js::the project > has a test of its own"}
    assert set(report.cases) == {
        "test/existing.test.js::the project > has a test of its own",
        "test/answer.test.js::answers 42",
    }
    assert not any("consort_canary" in t for t in evidence.tests)


@pytest.mark.parametrize(
    ("forgery", "files"),
    [
        ("all-pass", {"vitest.config.js": REWRITE_ON_EXIT % ALL_PASS}),
        (
            "committed-report",
            {"vitest.config.js": REWRITE_ON_EXIT % COMMITTED, "forged-junit.xml": FORGED_REPORT},
        ),
    ],
)
def test_a_vitest_report_rewritten_by_the_project_is_caught(node_project, forgery, files):
    evidence, _report = _run(node_project, {"test/answer.test.js": FAILING_TEST, **files}, forgery)
    forged = [v for v in evidence.violations if v.rule is SealRule.CANARY_FORGED]
    assert forged, (evidence.problems, evidence.output_tail)
    assert evidence.canaries is not None and not evidence.canaries["holds"]
    # The forgery did take effect: the report Consort read says the failing test passed.
    assert any(t.endswith("answers 42") for t in evidence.passing), evidence.passing


# Jest loads jest.config.js in its main process, as Vitest does its config.
JEST_REWRITE_ON_EXIT = """\
const fs = require("node:fs");
process.on("exit", () => {
  const report = process.env.JEST_JUNIT_OUTPUT_FILE;
  const xml = fs.readFileSync(report, "utf8");
  fs.writeFileSync(report, xml.replace(/<failure>[\\s\\S]*?<\\/failure>/g, ""));
  process.exitCode = 0;
});
module.exports = {};
"""
JEST_FAILING_TEST = """\
const { answer } = require("../src/answers.js");

it("answers 42", () => {
  expect(answer()).toBe(42);
});
"""


def test_an_honest_jest_run_shows_its_canaries_held(jest_project):
    evidence, report = _run(jest_project, {"test/answer.test.js": JEST_FAILING_TEST}, "honest")
    assert evidence.violations == (), evidence.problems
    assert evidence.canaries is not None and evidence.canaries["holds"]
    assert report is not None and report.passed() == {
        "test/existing.test.js::has a test of its own"
    }
    assert report.cases["test/answer.test.js::answers 42"].outcome.value == "failed"


def test_a_jest_report_rewritten_to_say_all_pass_is_caught(jest_project):
    files = {"test/answer.test.js": JEST_FAILING_TEST, "jest.config.js": JEST_REWRITE_ON_EXIT}
    evidence, _report = _run(jest_project, files, "all-pass")
    assert any(v.rule is SealRule.CANARY_FORGED for v in evidence.violations), evidence.problems
    assert "test/answer.test.js::answers 42" in evidence.passing  # the forgery took effect
