"""The static checks on source strings: each smell found where it is, and not where it is not."""

from __future__ import annotations

import json
from textwrap import dedent

from consort.adapters.smells import (
    Smell,
    SmellKind,
    added_skip_markers,
    check_source,
    expected_values,
    hard_coded_answers,
)

PROD = "src/app/core.py"
TEST = "tests/test_core.py"


def kinds_and_lines(smells: list[Smell]) -> list[tuple[SmellKind, int]]:
    return [(smell.kind, smell.line) for smell in smells]


def in_production(text: str) -> list[Smell]:
    return check_source(PROD, dedent(text), is_test=False)


def in_tests(text: str) -> list[Smell]:
    return check_source(TEST, dedent(text), is_test=True)


# ---- the record ---------------------------------------------------------------------------------


def test_smell_kinds_are_kebab_case() -> None:
    assert SmellKind.PYTEST_IN_PRODUCTION.value == "pytest-in-production"
    assert SmellKind.SWALLOWED_EXCEPTION.value == "swallowed-exception"


def test_as_data_is_json_ready() -> None:
    smell = Smell(SmellKind.EXIT_AT_IMPORT, "a.py", 3, "`sys.exit()` runs")
    data = smell.as_data()
    assert data == {
        "kind": "exit-at-import",
        "path": "a.py",
        "line": 3,
        "detail": "`sys.exit()` runs",
    }
    assert json.loads(json.dumps(data)) == data


def test_a_file_that_does_not_parse_is_skipped() -> None:
    assert in_production("import pytest\ndef broken(:\n") == []
    assert in_tests("def test_x(:\n") == []
    assert check_source(PROD, "x = 1\0", is_test=False) == []


# ---- pytest or the tests in production code -----------------------------------------------------


def test_production_importing_pytest_or_test_modules_is_reported() -> None:
    smells = in_production(
        """\
        import pytest
        from _pytest.monkeypatch import MonkeyPatch
        import tests.helpers as helpers
        from tests import fixtures
        from conftest import DATA
        import test_core
        from . import conftest
        """
    )
    assert kinds_and_lines(smells) == [(SmellKind.PYTEST_IN_PRODUCTION, n) for n in range(1, 8)]
    assert "`pytest`" in smells[0].detail
    assert "test module `tests.helpers`" in smells[2].detail


def test_ordinary_imports_in_production_and_pytest_in_tests_are_fine() -> None:
    assert (
        in_production(
            """\
            import os
            from app.contest import rules
            from app.testing_tools import builder
            import pytester_like
            """
        )
        == []
    )
    test_file = "import pytest\nfrom tests.helpers import git\n\ndef test_x():\n    assert git()\n"
    assert in_tests(test_file) == []


# ---- exits at import time -----------------------------------------------------------------------


def test_exits_at_import_time_are_reported_in_any_file() -> None:
    text = """\
        import os
        import sys as system
        from os import _exit as hard_exit
        import pytest

        system.exit(0)
        if os.environ.get("CI"):
            hard_exit(0)
        class Config:
            quit()
        @decorate(exit(1))
        def handler(code=os.abort()):
            pass
        pytest.exit("done", returncode=0)
        raise SystemExit(0)
        """
    exits = [(SmellKind.EXIT_AT_IMPORT, n) for n in (6, 8, 10, 11, 12, 14, 15)]
    assert kinds_and_lines(in_tests(text)) == exits
    # The same file as production code: the exits, and its pytest import too.
    assert kinds_and_lines(in_production(text)) == [(SmellKind.PYTEST_IN_PRODUCTION, 4), *exits]
    assert "`sys.exit()`" in in_tests(text)[0].detail


def test_exits_that_run_later_or_only_as_a_script_are_fine() -> None:
    text = """\
        import os
        import sys

        def main():
            sys.exit(run())

        async def stop():
            os.kill(os.getpid(), 9)

        handler = lambda: os._exit(1)

        class Service:
            def close(self):
                raise SystemExit

        if __name__ == "__main__":
            sys.exit(main())
        """
    assert in_production(text) == []


def test_the_else_branch_of_the_main_guard_runs_on_import() -> None:
    text = """\
        import sys
        if "__main__" == __name__:
            sys.exit(0)
        else:
            sys.exit(1)
        """
    assert kinds_and_lines(in_production(text)) == [(SmellKind.EXIT_AT_IMPORT, 5)]


# ---- tests without assertions -------------------------------------------------------------------


def test_tests_that_assert_nothing_are_reported() -> None:
    text = """\
        import pytest

        def test_runs_only():
            total([1, 2])

        async def test_async_runs_only():
            await total([1])

        class TestCart:
            def test_method_runs_only(self):
                self.cart.add(1)

            def helper(self):
                pass

        def helper_without_assert():
            total([])
        """
    smells = in_tests(text)
    assert kinds_and_lines(smells) == [
        (SmellKind.TEST_WITHOUT_ASSERTION, 3),
        (SmellKind.TEST_WITHOUT_ASSERTION, 6),
        (SmellKind.TEST_WITHOUT_ASSERTION, 10),
    ]
    assert "`test_runs_only`" in smells[0].detail


def test_every_kind_of_assertion_counts() -> None:
    text = """\
        import pytest
        from pytest import raises as expect_raises
        from unittest import TestCase

        def test_assert():
            assert total([1]) == 1

        def test_raises():
            with pytest.raises(ValueError):
                total(None)

        def test_renamed_raises():
            with expect_raises(ValueError):
                total(None)

        def test_warns():
            with pytest.warns(UserWarning):
                total([])

        def test_fail():
            if total([]) != 0:
                pytest.fail("not zero")

        def test_mock(sender):
            notify(sender)
            sender.send.assert_called_once_with("hi")

        def test_helper():
            assert_valid(total([1]))

        class TestTotals(TestCase):
            def test_unittest(self):
                self.assertEqual(total([2]), 2)

        @pytest.fixture
        def test_data():
            return [1, 2]
        """
    assert in_tests(text) == []


def test_assertions_are_only_required_in_test_files() -> None:
    assert in_production("def test_connection():\n    connect()\n") == []


# ---- swallowed exceptions -----------------------------------------------------------------------


def test_broad_excepts_that_do_nothing_are_reported() -> None:
    text = """\
        import contextlib
        from contextlib import suppress

        def a():
            try:
                work()
            except:
                pass

        def b():
            for item in items:
                try:
                    work(item)
                except Exception:
                    continue

        def c():
            try:
                return work()
            except (ValueError, BaseException):
                return None

        def d():
            try:
                work()
            except Exception as exc:
                ...

        def e():
            with contextlib.suppress(Exception):
                work()
            with suppress(KeyError, BaseException):
                work()
        """
    smells = in_production(text)
    assert kinds_and_lines(smells) == [
        (SmellKind.SWALLOWED_EXCEPTION, line) for line in (7, 14, 20, 26, 30, 32)
    ]
    assert "`except:`" in smells[0].detail
    assert "`except (ValueError, BaseException):`" in smells[2].detail


def test_narrow_or_handled_exceptions_are_fine() -> None:
    text = """\
        import contextlib
        import logging

        def a():
            try:
                work()
            except KeyError:
                pass

        def b():
            try:
                work()
            except Exception:
                logging.exception("work failed")

        def c():
            try:
                return work()
            except Exception:
                return fallback()

        def d():
            try:
                work()
            except Exception as exc:
                raise WorkFailed() from exc

        def e():
            with contextlib.suppress(FileNotFoundError):
                work()
        """
    assert in_production(text) == []


def test_swallowed_exceptions_are_only_reported_in_production_code() -> None:
    test_file = "def test_x():\n    try:\n        f()\n    except:\n        pass\n    assert f()\n"
    assert in_tests(test_file) == []


# ---- skip and xfail markers ---------------------------------------------------------------------

BASE_TESTS = """\
import pytest

@pytest.mark.skipif(True, reason="old")
def test_old():
    assert 1

def test_total():
    assert total() == 3
"""


def test_new_skip_markers_are_reported_at_their_lines() -> None:
    head = """\
import pytest
import unittest
from pytest import mark

pytestmark = pytest.mark.xfail

@pytest.mark.skipif(True, reason="old")
def test_old():
    assert 1

@mark.skip
def test_total():
    assert total() == 3

def test_param():
    pytest.skip("later")

class TestLegacy(unittest.TestCase):
    @unittest.expectedFailure
    def test_x(self):
        self.skipTest("no")
"""
    smells = added_skip_markers(TEST, head, BASE_TESTS)
    assert kinds_and_lines(smells) == [
        (SmellKind.SKIP_MARKER_ADDED, line) for line in (5, 11, 16, 19, 21)
    ]
    assert "`pytest.mark.xfail`" in smells[0].detail
    assert "`pytest.mark.skip`" in smells[1].detail


def test_markers_that_only_moved_or_were_swapped_are_not_reported() -> None:
    moved = "import os\n\n" + BASE_TESTS
    assert added_skip_markers(TEST, moved, BASE_TESTS) == []
    swapped = BASE_TESTS.replace('skipif(True, reason="old")', "xfail")
    assert added_skip_markers(TEST, swapped, BASE_TESTS) == []
    fewer = BASE_TESTS.replace('@pytest.mark.skipif(True, reason="old")\n', "")
    assert added_skip_markers(TEST, fewer, BASE_TESTS) == []


def test_every_marker_of_a_new_file_is_new() -> None:
    smells = added_skip_markers(TEST, BASE_TESTS, None)
    assert kinds_and_lines(smells) == [(SmellKind.SKIP_MARKER_ADDED, 3)]
    assert added_skip_markers(TEST, "def test_x(:\n", None) == []


# ---- hard-coded answers -------------------------------------------------------------------------

TESTS_WITH_EXPECTATIONS = """\
def test_total():
    assert total([40, 2]) == 42
    assert "out of stock" == reason()
    assert status() in ("active", "paused")
    assert lines() == [3, 4, 5]
    assert price() == -7.5
    assert flag() is None
    assert count() == 2
    assert code() == "ok"
    assert items() == []
    assert name() != "nobody"
"""


def test_expected_values_are_the_non_trivial_literals_asserts_compare_against() -> None:
    expected = expected_values(TEST, TESTS_WITH_EXPECTATIONS)
    shown = sorted(where.shown for where in expected.values())
    assert shown == ["'active'", "'out of stock'", "'paused'", "-7.5", "42", "[3, 4, 5]"]
    assert {where.line for where in expected.values() if where.shown == "42"} == {2}
    assert all(where.path == TEST for where in expected.values())


def test_literals_production_gained_that_tests_expect_are_reported() -> None:
    expected = expected_values(TEST, TESTS_WITH_EXPECTATIONS)
    base = """\
STATUSES = ("active", "paused")

def total(values):
    raise NotImplementedError
"""
    head = """\
STATUSES = ("active", "paused")

def total(values):
    return 42.0

def reason():
    return {"reason": "out of stock"}["reason"]

def lines():
    return [3, 4, 5]

def price():
    return -7.5

def count():
    return 2 + len("ok")

def name():
    return "nobody"
"""
    smells = hard_coded_answers(PROD, head, base, expected)
    assert kinds_and_lines(smells) == [
        (SmellKind.HARD_CODED_ANSWER, line) for line in (4, 7, 10, 13)
    ]
    assert all(smell.path == PROD for smell in smells)
    assert "the literal 42 is what tests/test_core.py:2 expects" in smells[0].detail
    assert "'out of stock'" in smells[1].detail


def test_literals_production_already_had_are_not_reported() -> None:
    expected = expected_values(TEST, TESTS_WITH_EXPECTATIONS)
    base = 'STATUSES = ("active", "paused")\n'
    head = '"""Statuses."""\n\nSTATUSES = ("active", "paused")\n'
    assert hard_coded_answers(PROD, head, base, expected) == []
    # New to the file, the same literals are reported.
    assert [s.line for s in hard_coded_answers(PROD, head, None, expected)] == [3, 3]
