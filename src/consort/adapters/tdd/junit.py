"""Reading pytest's JUnit XML report into typed results keyed by pytest node id.

Consort asks pytest for the xunit1 flavour, whose test cases carry their `file`, so that a case
maps back to the node id the navigator declared ("tests/test_x.py::TestA::test_b"). Other
runners' dialects (Vitest's reporter, jest-junit) are read too: their cases are
`<file>::<name>`, a file that failed to load counts as broken, and a failure whose report gives
no type (jest-junit) is classed by its text (`TypeError: ...` an error, a failed matcher an
assertion), as the navigator's declaration needs.

gotestsum writes one `testsuite` per Go package, its cases `<package>::<TestName>`: a failure
whose output shows a panic is an error, and its `TestMain` case (a package that did not build,
or whose test binary died outside any test) breaks the whole package. Maven Surefire writes one
file per test class (`TEST-<class>.xml`), read together (`merged_reports`), its cases
`<class>::<method>`; its `<failure>` is a failed assertion (JUnit's `AssertionFailedError`...),
its `<error>` an exception.
"""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from consort.core.config import RunnerKind
from consort.core.errors import ConsortError

JEST_SUITE_FAILURE = "Test suite failed to run"  # jest-junit's classname for a broken file
JEST_MATCHER = re.compile(r"^(Error: )?expect\(")  # how a failed Jest matcher's text begins
GO_PACKAGE_FAILURE = "TestMain"  # gotestsum's case for a package that failed outside its tests
GO_PANIC = re.compile(r"^panic: ", re.MULTILINE)
# Exception types that are failed assertions: Python's and JavaScript's AssertionError, JUnit's
# and opentest4j's AssertionFailedError, JUnit 4's ComparisonFailure, MultipleFailuresError.
ASSERTION_KIND = re.compile(
    r"(AssertionError|AssertionFailedError|ComparisonFailure|MultipleFailuresError)$"
)
SUREFIRE_REPORT = "TEST-*.xml"
_XML_DECLARATION = re.compile(rb"^\s*<\?xml[^>]*\?>")


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"  # an assertion (or pytest.fail) failed
    ERROR = "error"  # an exception outside the assertion, or in setup/teardown
    SKIPPED = "skipped"  # skipped or xfailed: neither counts as passing


@dataclass(frozen=True)
class CaseResult:
    node_id: str
    outcome: Outcome
    kind: str  # the exception type pytest reported, e.g. "AssertionError"
    message: str


@dataclass(frozen=True)
class JUnitReport:
    cases: Mapping[str, CaseResult]
    sha256: str
    # Test files that could not even be imported, by file: none of their tests ran.
    collection_errors: Mapping[str, CaseResult] = field(default_factory=dict)

    def case(self, test_id: str) -> CaseResult | None:
        """A test's result; a test in a file that failed to import counts as an error."""
        found = self.cases.get(test_id)
        if found is None:
            broken = self.collection_errors.get(test_id.split("::", 1)[0])
            if broken is not None:
                return CaseResult(test_id, Outcome.ERROR, broken.kind, broken.message)
        return found

    def passed(self) -> set[str]:
        return {n for n, c in self.cases.items() if c.outcome is Outcome.PASSED}

    def counts(self) -> dict[str, int]:
        totals = {outcome.value: 0 for outcome in Outcome}
        for case in self.cases.values():
            totals[case.outcome.value] += 1
        return totals

    @property
    def total(self) -> int:
        return len(self.cases)


class ReportMissing(ConsortError):
    pass


def node_id(file: str, classname: str, name: str) -> str:
    module = file[:-3].replace("/", ".") if file.endswith(".py") else file
    rest = classname[len(module) + 1 :] if classname.startswith(module + ".") else ""
    classes = rest.split(".") if rest else []
    return "::".join(part for part in (file, *classes, name) if part)


def parse_report(path: Path) -> JUnitReport:
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise ReportMissing(f"the test run wrote no report ({path.name})") from exc
    return parse_report_bytes(data)


def merged_reports(folder: Path) -> bytes:
    """Every `TEST-*.xml` in `folder` (Surefire's, one per test class) as one report, in name
    order; b"" when there is none. Each file goes in as written: one that is cut short or not
    XML leaves the whole report unreadable, never silently dropped."""
    try:
        files = sorted(p for p in folder.glob(SUREFIRE_REPORT) if p.is_file())
    except OSError:
        return b""
    parts = []
    for path in files:
        try:
            parts.append(_XML_DECLARATION.sub(b"", path.read_bytes(), count=1))
        except OSError:
            continue
    if not parts:
        return b""
    return (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n'
        + b"\n".join(parts)
        + b"\n</testsuites>\n"
    )


def case_id(case: ET.Element, dialect: RunnerKind) -> str:
    """A test case's id. pytest's xunit1 cases map back to node ids; other runners' cases are
    `<file>::<name>`, the file taken from the `file` attribute or else the classname (Vitest puts
    the file there; Consort's Jest profile asks jest-junit to)."""
    file = case.get("file") or ""
    classname = case.get("classname", "")
    name = case.get("name", "")
    if dialect is RunnerKind.PYTEST:
        return node_id(file, classname, name)
    where = file or classname
    return f"{where}::{name}" if where else name


def parse_report_bytes(
    data: bytes, *, prefix: str = "", dialect: RunnerKind = RunnerKind.PYTEST
) -> JUnitReport:
    """The report's cases by id, each id starting with `prefix` (the folder the runner ran in,
    relative to the repository root, so that ids are repository paths)."""
    if not data.strip():
        raise ReportMissing("the test run wrote no report")
    try:
        root = ET.fromstring(data)  # noqa: S314 -- written by the test process Consort ran
    except ET.ParseError as exc:
        raise ReportMissing(f"the test report is incomplete or not XML: {exc}") from exc
    cases: dict[str, CaseResult] = {}
    broken: dict[str, CaseResult] = {}
    for case in root.iter("testcase"):
        file = case.get("file") or ""
        if dialect is not RunnerKind.PYTEST and _file_failure(case):
            # Vitest's record of a test file that failed to load: one case named after it.
            broken[prefix + (file or case.get("classname", ""))] = _result(prefix + file, case)
            continue
        if dialect is not RunnerKind.PYTEST and _jest_suite_failure(case):
            # jest-junit's (with reportTestSuiteErrors): a case named after the file.
            where = prefix + case.get("name", "")
            broken[where] = _result(where, case, dialect)
            continue
        if dialect is not RunnerKind.PYTEST and _go_package_failure(case):
            where = prefix + case.get("classname", "")
            broken[where] = _result(where, case, dialect)
            continue
        pytest_import_error = dialect is RunnerKind.PYTEST and not case.get("classname")
        if pytest_import_error and case.find("error") is not None:
            # pytest's record of a module that failed to import: classname empty, name dotted.
            where = prefix + (file or case.get("name", ""))
            broken[where] = _result(prefix + file, case)
            continue
        ident = prefix + case_id(case, dialect)
        cases[ident] = _result(ident, case, dialect)
    return JUnitReport(cases, hashlib.sha256(data).hexdigest(), broken)


def _file_failure(case: ET.Element) -> bool:
    classname = case.get("classname", "")
    failed = case.find("failure") is not None or case.find("error") is not None
    return failed and bool(classname) and case.get("name") == classname


def _jest_suite_failure(case: ET.Element) -> bool:
    return case.get("classname") == JEST_SUITE_FAILURE and case.find("error") is not None


def _go_package_failure(case: ET.Element) -> bool:
    failed = case.find("failure") is not None or case.find("error") is not None
    return failed and case.get("name") == GO_PACKAGE_FAILURE and bool(case.get("classname"))


def _thrown_type(text: str) -> str:
    """The exception type from a JavaScript error's text, for a report that gives none
    (jest-junit writes `TypeError: x is not a function`). Jest's failed matchers print as
    `Error: expect(received)...`: an assertion, not an error. A Go test's output that shows a
    panic is one ("panic"); a plain `t.Error`/`t.Fatal` failure gives no type at all."""
    if GO_PANIC.search(text):
        return "panic"
    first = text.strip().split("\n", 1)[0]
    if JEST_MATCHER.match(first):
        return "AssertionError"
    match = re.match(r"^((?:[A-Za-z_$][\w$.]*)?(?:Error|Exception))\b", first)
    return match.group(1) if match else ""


def _raised_type(text: str) -> str:
    """The exception type from a pytest traceback, whose last line is `path:line: ExcType`
    (recent pytest versions no longer put it in the report's `type` attribute)."""
    match = re.search(r":\d+: ([A-Za-z_][\w.]*)\s*$", text.strip())
    return match.group(1) if match else ""


def _result(ident: str, case: ET.Element, dialect: RunnerKind = RunnerKind.PYTEST) -> CaseResult:
    for tag, outcome in (("failure", Outcome.FAILED), ("error", Outcome.ERROR)):
        found = case.find(tag)
        if found is not None:
            text = found.text or ""
            guess = _raised_type if dialect is RunnerKind.PYTEST else _thrown_type
            kind = found.get("type") or guess(text)
            message = (found.get("message") or "") + "\n" + (found.text or "")
            # pytest files exceptions raised inside a test as <failure> too: keep them apart
            # from failed assertions, as the navigator's declaration does.
            assertion = "AssertionError" in kind or bool(ASSERTION_KIND.search(kind))
            raised = tag == "failure" and bool(kind) and not assertion
            return CaseResult(ident, Outcome.ERROR if raised else outcome, kind, message.strip())
    skipped = case.find("skipped")
    if skipped is not None:
        return CaseResult(
            ident, Outcome.SKIPPED, skipped.get("type") or "", skipped.get("message") or ""
        )
    return CaseResult(ident, Outcome.PASSED, "", "")
