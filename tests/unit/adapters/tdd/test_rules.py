"""JUnit parsing and the RED/GREEN rules, on a report pytest 9 really wrote."""

from __future__ import annotations

import pytest

from consort.adapters.tdd.junit import Outcome, ReportMissing, node_id, parse_report
from consort.adapters.tdd.rules import green_problems, red_problems
from consort.core.artifacts.build import CyclePlan
from tests import helpers

MIXED = helpers.FIXTURES / "junit" / "pytest9-mixed.xml"


@pytest.fixture
def report():
    return parse_report(MIXED)


def plan(test_id: str, kind: str, pattern: str) -> CyclePlan:
    return CyclePlan.model_validate(
        {
            "test_files": [test_id.split("::", 1)[0]],
            "test_ids": [test_id],
            "expected_failure": {"kind": kind, "message_pattern": pattern},
        }
    )


def test_outcomes_are_read_per_node_id(report):
    assert report.cases["tests/test_k.py::test_assert"].outcome is Outcome.FAILED
    # an exception inside a test is an error, even though pytest files it as <failure>
    raised = report.cases["tests/test_k.py::test_raises"]
    assert raised.outcome is Outcome.ERROR and raised.kind == "LookupError"
    assert report.cases["tests/test_k.py::test_ok"].outcome is Outcome.PASSED
    assert report.cases["tests/test_more.py::test_skipped"].outcome is Outcome.SKIPPED
    assert report.cases["tests/test_more.py::test_xfailed"].outcome is Outcome.SKIPPED
    assert report.cases["tests/test_more.py::TestGroup::test_in_class"].outcome is Outcome.PASSED
    assert set(report.collection_errors) == {"tests/test_broken.py"}
    assert report.passed() == {
        "tests/test_k.py::test_ok",
        "tests/test_more.py::TestGroup::test_in_class",
    }
    assert len(report.sha256) == 64


def test_node_ids_keep_classes():
    assert node_id("tests/a.py", "tests.a.TestX", "test_y") == "tests/a.py::TestX::test_y"
    assert node_id("tests/a.py", "tests.a", "test_y") == "tests/a.py::test_y"


def test_a_missing_or_torn_report_is_refused(tmp_path):
    with pytest.raises(ReportMissing):
        parse_report(tmp_path / "none.xml")
    torn = tmp_path / "torn.xml"
    torn.write_text(MIXED.read_text()[:200])
    with pytest.raises(ReportMissing):
        parse_report(torn)


def test_red_holds_for_a_declared_assertion_failure(report):
    assert (
        red_problems(plan("tests/test_k.py::test_assert", "assertion", r"1 == 2"), report, []) == []
    )


def test_red_holds_for_an_import_error_declared_as_error(report):
    declared = plan("tests/test_broken.py::test_never", "error", "ModuleNotFoundError")
    assert red_problems(declared, report, []) == []


@pytest.mark.parametrize(
    ("test_id", "kind", "pattern", "reason"),
    [
        ("tests/test_k.py::test_ok", "assertion", ".", "passed before any code was written"),
        ("tests/test_k.py::test_nope", "assertion", ".", "was not collected"),
        ("tests/test_more.py::test_skipped", "assertion", ".", "was skipped"),
        ("tests/test_k.py::test_raises", "assertion", ".", "where assertion was declared"),
        ("tests/test_k.py::test_assert", "error", ".", "where error was declared"),
        ("tests/test_k.py::test_assert", "assertion", "3 == 4", "does not match"),
        ("tests/test_broken.py::test_never", "assertion", ".", "where assertion was declared"),
    ],
)
def test_red_refuses_a_test_that_does_not_fail_as_declared(report, test_id, kind, pattern, reason):
    problems = red_problems(plan(test_id, kind, pattern), report, [])
    assert len(problems) == 1 and reason in problems[0]


def test_red_refuses_when_a_previously_passing_test_breaks(report):
    problems = red_problems(
        plan("tests/test_k.py::test_assert", "assertion", "."),
        report,
        ["tests/test_k.py::test_ok", "tests/test_k.py::test_raises", "tests/test_gone.py::t"],
    )
    assert problems == [
        "tests/test_gone.py::t passed before this test was added and now is missing",
        "tests/test_k.py::test_raises passed before this test was added and now error",
    ]


def test_green_lists_every_reason(report):
    problems = green_problems(
        report,
        1,
        ["tests/test_more.py::test_skipped", "tests/test_k.py::test_gone"],
        previous_count=10,
    )
    text = "\n".join(problems)
    assert "tests/test_k.py::test_assert failed" in text
    assert "tests/test_k.py::test_raises error" in text
    assert "tests/test_broken.py could not be imported: ModuleNotFoundError" in text
    assert "tests/test_k.py::test_gone was not run" in text
    assert "tests/test_more.py::test_skipped was skipped or xfailed" in text
    assert "the suite shrank from 10 to 6 tests" in text


def test_green_holds_only_with_a_clean_exit(tmp_path):
    clean = tmp_path / "clean.xml"
    clean.write_text(
        '<testsuites><testsuite><testcase classname="tests.test_a" name="test_x" '
        'file="tests/test_a.py"/></testsuite></testsuites>'
    )
    report = parse_report(clean)
    assert green_problems(report, 0, ["tests/test_a.py::test_x"], 1) == []
    assert green_problems(report, 2, ["tests/test_a.py::test_x"], 1) == [
        "the test command exited 2 although every test passed"
    ]
