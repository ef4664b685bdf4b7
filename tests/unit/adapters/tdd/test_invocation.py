"""The test command as each runner gets it, its environment, and test ids as repository paths."""

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from consort.adapters.tdd.invocation import test_invocation as invocation_for
from consort.adapters.tdd.junit import parse_report_bytes
from consort.adapters.tdd.runenv import DbParts, command_env, workdir
from consort.core import config
from consort.core.config import MigrateSection, RunnerKind

URL = "postgresql://story_role:s3cr%40t@127.0.0.1:54321/consort_child_7"


def test_database_parts_fill_the_placeholders():
    parts = DbParts.from_url(URL)
    assert (parts.host, parts.port, parts.user, parts.password, parts.name) == (
        "127.0.0.1",
        "54321",
        "story_role",
        "s3cr@t",
        "consort_child_7",
    )
    assert parts.jdbc.startswith("jdbc:postgresql://127.0.0.1:54321/consort_child_7?user=")


def test_a_command_environment_maps_the_run_database_and_keeps_consorts_own_out(monkeypatch):
    monkeypatch.setenv("FROM_CONSORT", "x")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p evil")
    monkeypatch.setenv("KEEP_ME", "kept")
    section = MigrateSection(
        cwd="backend",
        env={
            "POSTGRES_SERVER": "{db.host}",
            "POSTGRES_PORT": "{db.port}",
            "POSTGRES_DB": "{db.name}",
            "SQLALCHEMY_URL": "postgresql+psycopg://{db.user}:{db.password}@{db.host}/{db.name}",
            "FASTAPI_ENV": "development",
        },
        pass_env=["KEEP_ME", "PYTEST_ADDOPTS"],
    )
    env = command_env(section, URL)
    assert env["DATABASE_URL"] == URL
    assert env["POSTGRES_SERVER"] == "127.0.0.1" and env["POSTGRES_PORT"] == "54321"
    assert env["POSTGRES_DB"] == "consort_child_7" and env["FASTAPI_ENV"] == "development"
    assert env["SQLALCHEMY_URL"].endswith("story_role:s3cr@t@127.0.0.1/consort_child_7")
    assert env["KEEP_ME"] == "kept"
    assert "FROM_CONSORT" not in env and "PYTEST_ADDOPTS" not in env
    assert workdir(Path("/x"), section) == Path("/x/backend")


def test_pytest_gets_consorts_options_and_a_junit_runner_gets_none(tmp_path):
    pytest_run = invocation_for(config.TestSection(), URL, tmp_path, tmp_path, "canary_mod")
    assert pytest_run.pipe and pytest_run.canaries
    assert "--junitxml={side_channel}" in pytest_run.argv
    vitest = config.TestSection(
        runner=RunnerKind.JUNIT,
        command=["npx", "vitest", "run", "--reporter=junit", "--outputFile.junit={junit}"],
        env={"REPORT": "{junit}"},
    )
    run = invocation_for(vitest, URL, tmp_path, tmp_path, "canary_mod")
    assert run.argv[:4] == ["npx", "vitest", "run", "--reporter=junit"]
    assert run.report is not None and run.argv[-1] == f"--outputFile.junit={run.report}"
    assert run.env["REPORT"] == str(run.report)
    assert not any(a.startswith(("--junitxml", "-p", "--rootdir")) for a in run.argv)
    assert not run.pipe and run.report.parent in run.writable
    assert run.canaries and run.canary_kind is config.CanaryKind.VITEST  # told from the command
    assert run.read_report() == b""  # nothing written yet
    gotestsum = config.TestSection(
        runner=RunnerKind.JUNIT, command=["gotestsum", "--junitfile", "{junit}"]
    )
    assert not invocation_for(gotestsum, URL, tmp_path, tmp_path, "canary_mod").canaries


PYTEST_REPORT = b"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_users" name="test_create" file="tests/test_users.py" line="3"/>
<testcase classname="" name="tests.test_broken" file="tests/test_broken.py">
<error message="collection failure">ImportError</error></testcase>
</testsuite></testsuites>"""

VITEST_REPORT = b"""<?xml version="1.0" encoding="UTF-8" ?>
<testsuites name="vitest tests" tests="2" failures="1" errors="0" time="0.01">
<testsuite name="test/items.test.js" tests="2" failures="1" errors="0" skipped="0">
<testcase classname="test/items.test.js" name="items &gt; lists none" time="0.001"></testcase>
<testcase classname="test/items.test.js" name="items &gt; adds one" time="0.002">
<failure message="expected 0 to be 1" type="AssertionError">AssertionError: expected 0 to be 1
</failure></testcase></testsuite></testsuites>"""


def test_ids_of_a_suite_run_from_a_subfolder_are_repository_paths():
    report = parse_report_bytes(PYTEST_REPORT, prefix="backend/")
    assert set(report.cases) == {"backend/tests/test_users.py::test_create"}
    assert "backend/tests/test_broken.py" in report.collection_errors
    assert report.case("backend/tests/test_broken.py::test_x").outcome.value == "error"


def test_a_vitest_report_maps_to_file_and_name():
    report = parse_report_bytes(VITEST_REPORT, prefix="web/", dialect=RunnerKind.JUNIT)
    assert report.passed() == {"web/test/items.test.js::items > lists none"}
    failed = report.cases["web/test/items.test.js::items > adds one"]
    assert failed.outcome.value == "failed" and "expected 0 to be 1" in failed.message


def test_a_captured_vitest_report_reads_as_its_outcomes():
    from tests.helpers import FIXTURES

    data = (FIXTURES / "junit" / "vitest-4.1.12.xml").read_bytes()
    report = parse_report_bytes(data, dialect=RunnerKind.JUNIT)
    assert report.passed() == {"test/existing.test.js::the project > has a test of its own"}
    raised = report.cases["test/t2.test.js::doubles"]
    assert raised.outcome.value == "error" and raised.kind == "TypeError"
    assert report.cases["test/t2.test.js::answers"].outcome.value == "failed"
    broken = report.case("test/broken.test.js::anything")
    assert broken is not None and broken.outcome.value == "error"
    assert "Cannot find module" in broken.message


def test_a_captured_jest_report_reads_as_its_outcomes():
    """jest-junit 17 under Jest 30 (stack frames removed), as the Jest profile asks for it:
    classname the file, name the title, suite errors reported. Its failures carry no type: a
    failed matcher is an assertion, a thrown TypeError an error, a broken file is broken."""
    from tests.helpers import FIXTURES

    data = (FIXTURES / "junit" / "jest-30.5.2.xml").read_bytes()
    report = parse_report_bytes(data, dialect=RunnerKind.JUNIT)
    assert report.passed() == {
        "test/existing.test.js::has a test of its own",
        "test/consort_canary_abc.test.js::test_abc_passes",
    }
    failed = report.cases["test/answer.test.js::is 42"]
    assert failed.outcome.value == "failed" and "Expected: 42" in failed.message
    raised = report.cases["test/answer.test.js::throws"]
    assert raised.outcome.value == "error" and raised.kind == "TypeError"
    assert report.cases["test/answer.test.js::is skipped"].outcome.value == "skipped"
    canary = report.cases["test/consort_canary_abc.test.js::test_abc_fails"]
    assert canary.outcome.value == "error" and "NONCE123" in canary.message
    broken = report.case("test/broken.test.js::anything")
    assert broken is not None and broken.outcome.value == "error"
    assert "Test suite failed to run" in broken.message


def test_a_command_has_the_variables_of_a_login_shell(monkeypatch):
    import pwd

    monkeypatch.delenv("SHELL", raising=False)
    monkeypatch.delenv("LOGNAME", raising=False)
    monkeypatch.setenv("TZ", "Europe/Paris")
    env = command_env(MigrateSection(), URL)
    account = pwd.getpwuid(os.getuid())
    assert env["SHELL"] == (account.pw_shell or "/bin/sh")
    assert env["USER"] == env["LOGNAME"] == account.pw_name
    assert env["SHLVL"] and env["LANG"] and env["TZ"] == "Europe/Paris"
    monkeypatch.setenv("SHELL", "/bin/zsh")
    assert command_env(MigrateSection(), URL)["SHELL"] == "/bin/zsh"


def test_listed_plugins_are_loaded_alone_after_the_canary(tmp_path):
    every = invocation_for(config.TestSection(), URL, tmp_path, tmp_path, "canary_mod")
    assert "--disable-plugin-autoload" not in every.argv
    listed = config.TestSection(plugins=["pytest_asyncio.plugin", "xdist"])
    argv = invocation_for(listed, URL, tmp_path, tmp_path, "canary_mod").argv
    assert "--disable-plugin-autoload" in argv
    loaded = [argv[i + 1] for i, part in enumerate(argv) if part == "-p"]
    # Consort's canary plugin first: it takes its secret before any other plugin's code runs.
    assert loaded == ["no:cacheprovider", "canary_mod", "pytest_asyncio.plugin", "xdist"]


def test_plugins_are_module_names_for_pytest_alone():
    for bad in (["no:cacheprovider"], ["a b"], ["pkg/plugin"], [""]):
        with pytest.raises(ValidationError, match="not a module name"):
            config.TestSection(plugins=bad)
    with pytest.raises(ValidationError, match="plugins applies to runner"):
        config.TestSection(
            runner=RunnerKind.JUNIT, command=["npx", "vitest", "{junit}"], plugins=[]
        )
