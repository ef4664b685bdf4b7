"""The RED and GREEN rules: pure functions from a plan and reports to the reasons a claim fails.

An empty list means the claim holds. Every reason is a sentence the agent gets back as feedback.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from consort.adapters.smells.checks import unasserted_tests
from consort.adapters.smells.syntax import import_aliases, parse
from consort.adapters.tdd.junit import JUnitReport, Outcome
from consort.core.artifacts.build import CyclePlan, FailureKind


def red_problems(
    plan: CyclePlan, report: JUnitReport, previously_passing: Collection[str]
) -> list[str]:
    """RED holds when every declared test ran and failed as declared, and nothing that passed
    before fails now."""
    problems = []
    pattern = re.compile(plan.expected_failure.message_pattern)
    want = Outcome.FAILED if plan.expected_failure.kind is FailureKind.ASSERTION else Outcome.ERROR
    for test_id in plan.test_ids:
        case = report.case(test_id)
        if case is None:
            problems.append(f"{test_id} was not collected: the declared test does not exist")
        elif case.outcome is Outcome.PASSED:
            problems.append(f"{test_id} passed before any code was written: it tests nothing new")
        elif case.outcome is Outcome.SKIPPED:
            problems.append(f"{test_id} was skipped; a RED test must run and fail")
        elif case.outcome is not want:
            problems.append(
                f"{test_id} failed with {case.kind or case.outcome.value} where "
                f"{plan.expected_failure.kind.value} was declared: {_first_line(case.message)}"
            )
        elif not pattern.search(case.message):
            problems.append(
                f"{test_id} failed, but its message does not match "
                f"{plan.expected_failure.message_pattern!r}: {_first_line(case.message)}"
            )
    for test_id in sorted(previously_passing):
        case = report.cases.get(test_id)
        if case is None or case.outcome is not Outcome.PASSED:
            state = "is missing" if case is None else case.outcome.value
            problems.append(f"{test_id} passed before this test was added and now {state}")
    return problems


def vacuous_red_tests(plan: CyclePlan, sources: Mapping[str, str]) -> list[str]:
    """Declared RED tests that assert nothing that can fail (`sources`: each test file's text
    at RED): no check at all, or only checks that hold for any code (`smells.vacuity`:
    `assert True`, `is not None`, `pytest.raises(Exception)`, a swallowed AssertionError).
    Such a test fails only while the code is missing (an ImportError) and then passes whatever
    the code does: the GREEN it leads to proves nothing."""
    unasserted: dict[str, set[str]] = {}
    for path, text in sources.items():
        tree = parse(text)
        if tree is not None:
            unasserted[path] = {f.name for f in unasserted_tests(tree, import_aliases(tree))}
    problems = []
    for test_id in plan.test_ids:
        path, _, rest = test_id.partition("::")
        name = rest.rsplit("::", 1)[-1].split("[", 1)[0]
        if name in unasserted.get(path, set()):
            problems.append(
                f"{test_id} asserts nothing that can fail: it would pass whatever the code does "
                "once the code can be imported (no check, or only checks that hold for any "
                "value: a constant, `is not None`, a tuple or list, `pytest.raises(Exception)`, "
                "an AssertionError caught or expected; or checks that need not run: after a "
                "`return`, in a function never called); a RED test must check what the code "
                "does"
            )
    return problems


def green_problems(
    report: JUnitReport,
    exit_code: int,
    red_era_tests: Collection[str],
    previous_count: int,
) -> list[str]:
    """GREEN holds when the whole suite passed on its own and every test that existed at RED was
    collected and passed (none skipped, deselected, xfailed or missing), and no test vanished."""
    problems = []
    failing = sorted(
        n for n, c in report.cases.items() if c.outcome in (Outcome.FAILED, Outcome.ERROR)
    )
    for test_id in failing:
        failed = report.cases[test_id]
        problems.append(f"{test_id} {failed.outcome.value}: {_first_line(failed.message)}")
    for file, broken in sorted(report.collection_errors.items()):
        problems.append(f"{file} could not be imported: {_last_error_line(broken.message)}")
    for test_id in sorted(red_era_tests):
        case = report.cases.get(test_id)
        if case is None:
            problems.append(f"{test_id} was not run (missing or deselected)")
        elif case.outcome is Outcome.SKIPPED:
            problems.append(f"{test_id} was skipped or xfailed; it must run and pass")
    if report.total < previous_count:
        problems.append(f"the suite shrank from {previous_count} to {report.total} tests")
    if exit_code != 0 and not problems:
        problems.append(f"the test command exited {exit_code} although every test passed")
    return problems


def _last_error_line(text: str) -> str:
    """The `E   ...` line of a pytest traceback says what went wrong; else the first line."""
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    return errors[-1][:300] if errors else _first_line(text)


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else "(no message)"
