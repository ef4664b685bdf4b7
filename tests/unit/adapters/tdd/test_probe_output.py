"""How `consort doctor` reads `pytest --collect-only` and a failed migrate command's output."""

from __future__ import annotations

from consort.adapters.tdd.probe import collect_result, last_line

COLLECTED = """tests/test_ok.py::test_a
tests/test_ok.py::test_b

2 tests collected in 0.00s
"""

BROKEN = """tests/test_ok.py::test_a

==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_broken.py _____________________
/venv/lib/python3.11/site-packages/_pytest/python.py:528: in importtestmodule
    mod = import_path(
/usr/lib/python3.11/ast.py:50: in parse
    return compile(source, filename, mode, flags,
E     File "/tmp/dxp/tests/test_broken.py", line 1
E       def test_x(:
E                  ^
E   SyntaxError: invalid syntax
=========================== short test summary info ============================
ERROR tests/test_broken.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 test collected, 1 error in 0.44s
"""

ALEMBIC = """Traceback (most recent call last):
  File "x.py", line 1, in <module>
sqlalchemy.exc.ProgrammingError: (psycopg.errors.InvalidSchemaName) schema "nope" does not exist
[SQL: CREATE TABLE nope.items (id serial)]
(Background on this error at: https://sqlalche.me/e/20/f405)
"""


def test_the_count_is_pytests_own():
    result = collect_result(0, COLLECTED)
    assert result.ok and result.detail == "2 test(s) collected"


def test_no_tests_is_a_count_of_zero():
    result = collect_result(5, "\nno tests collected in 0.01s\n")
    assert result.ok and result.detail == "0 test(s) collected"


def test_a_collection_error_names_the_file_and_its_reason():
    result = collect_result(2, BROKEN)
    assert not result.ok
    assert result.detail == (
        "collecting exited 2: ERROR tests/test_broken.py: SyntaxError: invalid syntax"
    )


def test_a_count_without_the_summary_is_not_taken_for_success():
    result = collect_result(0, "tests/test_ok.py: 2\n")
    assert not result.ok


def test_a_killed_collection_says_it_did_not_finish():
    result = collect_result(None, "tests/test_ok.py::test_a\n")
    assert not result.ok and result.detail.startswith("collecting did not finish")


def test_the_migrate_error_line_is_the_one_naming_the_error():
    assert last_line(ALEMBIC).startswith("sqlalchemy.exc.ProgrammingError:")
    assert last_line("") == "no output"
    assert last_line("one\ntwo\n") == "two"
