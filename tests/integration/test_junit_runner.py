"""`[test] runner = "junit"` at the level of one run: the command runs as written, with
`{junit}` replaced by a file Consort reads afterwards; a runner that writes no report, or a
report that is not JUnit XML, fails the run with a message that says so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from consort.adapters.paired import PairedBranches
from consort.adapters.tdd.runner import run_suite
from consort.core.project import Project
from tests.helpers import git

pytestmark = pytest.mark.integration

REPORT = (
    '<testsuites><testsuite name="s"><testcase classname="spec/a.spec.js" name="works"/>'
    "</testsuite></testsuites>"
)


def _run(root: Path, script: str):
    command = [sys.executable, "-c", script, "{junit}"]
    (root / "consort.toml").write_text(
        f'[test]\nrunner = "junit"\ncommand = {json.dumps(command)}\n'
        '[migrate]\ncommand = []\n[test.env]\nREPORT_AT = "{junit}"\n'
    )
    git(root, "add", "-A")
    git(
        root,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "runner",
        "--allow-empty",
    )
    project = Project(root)
    paired = PairedBranches(project)
    head = git(root, "rev-parse", "HEAD")
    evidence, report = run_suite(
        project, paired.dbs, root, paired.names("main").database, head, label="junit"
    )
    return evidence, report


def test_a_runner_that_writes_its_report_is_read_with_no_pytest_option(fresh_project):
    script = (
        "import os, sys, pathlib; assert sys.argv[1] == os.environ['REPORT_AT'];"
        "assert not any(a.startswith('--junitxml') for a in sys.argv);"
        f"pathlib.Path(sys.argv[1]).write_text({REPORT!r})"
    )
    evidence, report = _run(fresh_project, script)
    assert evidence.problems == (), evidence.problems
    assert report is not None and report.passed() == {"spec/a.spec.js::works"}
    assert evidence.as_data()["runner"] == "junit" and evidence.canaries is None


def test_a_runner_that_writes_no_report_says_so(fresh_project):
    evidence, report = _run(fresh_project, "print('ran, reporting nothing')")
    assert report is None
    said = " ".join(evidence.problems)
    assert "wrote no JUnit report" in said and "{junit}" in said
    assert "did not finish on its own" not in said


def test_a_report_that_is_not_junit_xml_says_so(fresh_project):
    evidence, report = _run(
        fresh_project, "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text('<oops')"
    )
    assert report is None
    assert "cannot read" in " ".join(evidence.problems)
