"""A Surefire-shaped run through Consort's sealed runner: `[test] junit_dir` is emptied before
the run, so a report committed into it is never read, and the TEST-*.xml files the run writes
there are read as one report.

Maven does not run here: the test command is a stand-in that connects to the run's database (as
a real suite must) and writes the Surefire fixture files where Surefire would."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from consort.adapters.paired import PairedBranches
from consort.adapters.tdd.runner import run_suite
from consort.core.project import Project
from tests.helpers import FIXTURES, consort, git, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

STAND_IN = """\
import os, pathlib, psycopg
with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
    conn.execute("select 1")
reports = pathlib.Path("target/surefire-reports")
reports.mkdir(parents=True, exist_ok=True)
for source in pathlib.Path("fixture-reports").glob("TEST-*.xml"):
    (reports / source.name).write_bytes(source.read_bytes())
"""
FORGED = '<testsuite><testcase classname="com.example.shop.Forged" name="passes"/></testsuite>'


@pytest.fixture(scope="module")
def maven_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("surefire") / "shop"
    try:
        ok(consort("init", str(root), cwd=root.parent))
        (root / "service").mkdir()
        (root / "service" / "stand_in.py").write_text(STAND_IN)
        reports = root / "service" / "fixture-reports"
        reports.mkdir()
        for source in (FIXTURES / "junit" / "surefire-3.2.5").glob("TEST-*.xml"):
            (reports / source.name).write_bytes(source.read_bytes())
        stale = root / "service" / "target" / "surefire-reports"
        stale.mkdir(parents=True)
        (stale / "TEST-com.example.shop.Forged.xml").write_text(FORGED)
        command = [sys.executable, "stand_in.py"]
        (root / "consort.toml").write_text(
            f'[test]\nrunner = "junit"\ncanary = "none"\ncommand = {json.dumps(command)}\n'
            'cwd = "service"\njunit_dir = "target/surefire-reports"\n[migrate]\ncommand = []\n'
        )
        git(root, "add", "-A", "-f")
        git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "maven shape")
        yield root
    finally:
        destroy_project_cluster(root)


def test_a_surefire_folder_is_read_as_the_runs_report_and_a_committed_one_never(maven_project):
    project = Project(maven_project)
    paired = PairedBranches(project)
    head = git(maven_project, "rev-parse", "HEAD")
    evidence, report = run_suite(
        project, paired.dbs, maven_project, paired.names("main").database, head, label="surefire"
    )
    assert report is not None, (evidence.problems, evidence.output_tail)
    assert report.passed() == {
        "service/com.example.shop.CartTest::addsAnItem",
        "service/com.example.shop.PriceTest::roundsHalfUp",
    }
    assert not any("Forged" in test for test in evidence.tests)
    failed = report.cases["service/com.example.shop.CartTest::totalIncludesTax"]
    assert failed.outcome.value == "failed"
