"""gotestsum's and Maven Surefire's JUnit dialects, and Surefire's folder of reports read as one.

The two fixtures were written from the formats' documentation, not captured (see
tests/fixtures/junit/README.md)."""

import pytest

from consort.adapters.tdd.invocation import test_invocation as invocation_for
from consort.adapters.tdd.junit import ReportMissing, merged_reports, parse_report_bytes
from consort.core import config
from consort.core.config import RunnerKind
from consort.core.errors import UsageError
from tests.helpers import FIXTURES

URL = "postgresql://u:p@127.0.0.1:5432/child"
SUREFIRE = FIXTURES / "junit" / "surefire-3.2.5"


def test_a_gotestsum_report_reads_as_its_outcomes():
    data = (FIXTURES / "junit" / "gotestsum-1.12.xml").read_bytes()
    report = parse_report_bytes(data, dialect=RunnerKind.JUNIT)
    assert report.passed() == {
        "example.com/shop/cart::TestAddItem",
        "example.com/shop/store::TestOpen",
    }
    failed = report.cases["example.com/shop/cart::TestTotal/with_tax"]
    assert failed.outcome.value == "failed" and "Total() = 3, want 4" in failed.message
    panicked = report.cases["example.com/shop/cart::TestIndex"]
    assert panicked.outcome.value == "error" and panicked.kind == "panic"
    skipped = report.cases["example.com/shop/cart::TestDiscount"]
    assert skipped.outcome.value == "skipped" and "not built yet" in skipped.message
    # A package that did not build: every test of it is an error, none is a case of its own.
    assert "example.com/shop/price::TestMain" not in report.cases
    broken = report.case("example.com/shop/price::TestRound")
    assert broken is not None and broken.outcome.value == "error"
    assert "undefined: Round" in broken.message
    assert report.counts() == {"passed": 2, "failed": 1, "error": 1, "skipped": 1}


def test_a_surefire_report_folder_reads_as_one_report():
    report = parse_report_bytes(merged_reports(SUREFIRE), dialect=RunnerKind.JUNIT)
    assert report.passed() == {
        "com.example.shop.CartTest::addsAnItem",
        "com.example.shop.PriceTest::roundsHalfUp",
    }
    failed = report.cases["com.example.shop.CartTest::totalIncludesTax"]
    assert failed.outcome.value == "failed" and failed.kind == "org.opentest4j.AssertionFailedError"
    assert "expected: <4> but was: <3>" in failed.message
    # JUnit 4's ComparisonFailure is an AssertionError too: a failed assertion.
    assert report.cases["com.example.shop.PriceTest::formatsEuros"].outcome.value == "failed"
    raised = report.cases["com.example.shop.CartTest::rejectsANegativeQuantity"]
    assert raised.outcome.value == "error" and raised.kind == "java.lang.NullPointerException"
    skipped = report.cases["com.example.shop.CartTest::appliesADiscount"]
    assert skipped.outcome.value == "skipped" and skipped.message == "discounts are not built yet"
    assert report.counts() == {"passed": 2, "failed": 2, "error": 1, "skipped": 1}


def test_a_cut_short_surefire_file_leaves_the_whole_folder_unreadable(tmp_path):
    for path in SUREFIRE.glob("TEST-*.xml"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    whole = (tmp_path / "TEST-com.example.shop.PriceTest.xml").read_bytes()
    (tmp_path / "TEST-com.example.shop.PriceTest.xml").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ReportMissing, match="not XML"):
        parse_report_bytes(merged_reports(tmp_path), dialect=RunnerKind.JUNIT)


def test_a_folder_with_no_report_is_a_run_that_wrote_none(tmp_path):
    (tmp_path / "CartTest.txt").write_text("Tests run: 4")  # Surefire's text summary only
    with pytest.raises(ReportMissing, match="wrote no report"):
        parse_report_bytes(merged_reports(tmp_path), dialect=RunnerKind.JUNIT)
    with pytest.raises(ReportMissing):
        parse_report_bytes(merged_reports(tmp_path / "absent"), dialect=RunnerKind.JUNIT)


def _maven(**extra: object) -> config.TestSection:
    fields: dict[str, object] = {"command": ["mvn", "-B", "test"], "runner": "junit"}
    return config.TestSection.model_validate({**fields, "canary": "none", **extra})


def test_junit_dir_is_emptied_before_the_run_and_read_after(tmp_path):
    """A report committed into the folder (or left by the migrate command) is never read as
    the run's: the folder is emptied when the run is set up."""
    tree, private = tmp_path / "tree", tmp_path / "private"
    stale = tree / "shop" / "target" / "surefire-reports"
    stale.mkdir(parents=True)
    (stale / "TEST-com.example.Forged.xml").write_text(
        '<testsuite><testcase classname="com.example.Forged" name="passes"/></testsuite>'
    )
    section = _maven(cwd="shop", junit_dir="target/surefire-reports")
    run = invocation_for(section, URL, tree / "shop", private, "canary_mod")
    assert run.argv == ["mvn", "-B", "test"] and run.report_dir == stale
    assert not stale.exists() and run.read_report() == b""
    stale.mkdir(parents=True)
    for path in SUREFIRE.glob("TEST-*.xml"):
        (stale / path.name).write_bytes(path.read_bytes())
    report = parse_report_bytes(run.read_report(), prefix=run.id_prefix, dialect=run.runner)
    assert "shop/com.example.shop.CartTest::addsAnItem" in report.passed()


def test_junit_dir_never_follows_a_committed_symbolic_link(tmp_path):
    outside = tmp_path / "outside" / "surefire-reports"
    outside.mkdir(parents=True)
    (outside / "keep.txt").write_text("not the run's")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "target").symlink_to(tmp_path / "outside")
    section = _maven(junit_dir="target/surefire-reports")
    with pytest.raises(UsageError, match="symbolic link"):
        invocation_for(section, URL, tree, tmp_path / "private", "canary_mod")
    assert (outside / "keep.txt").read_text() == "not the run's"


def test_the_report_is_named_once_and_only_for_a_junit_runner():
    with pytest.raises(ValueError, match="not both"):
        _maven(command=["mvn", "-Dout={junit}"], junit_dir="target/surefire-reports")
    with pytest.raises(ValueError, match='applies to runner = "junit"'):
        config.TestSection(junit_dir="target/surefire-reports")
    with pytest.raises(ValueError, match="inside the repository"):
        _maven(junit_dir="../elsewhere")
    with pytest.raises(ValueError, match="junit_dir"):
        _maven()  # neither {junit} nor junit_dir
