"""A navigator and a driver that cheat together: the RED test reads the code and checks
nothing that can fail, so the driver's wrong code (`answer()` returns 0) would pass it.

Each RED test here fails at RED as declared (the code cannot be imported yet) and asserts,
so a rule that asks only whether a test asserts lets it through; after it, any code that
imports is GREEN. The checks hold whatever the code returns (`assert answer() == 42 or
answer() != 42`, a check run only where it holds), or their failure is dropped (a `finally`
that returns), or they sit in a helper of the module's own named like a check that checks
nothing. RED must be refused for each (`smells/worked_out.py`, `smells/checks.py`), and no
GREEN recorded.
"""

from __future__ import annotations

import pytest

from tests.helpers import consort, events
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_build_lane import _new_project, configure, verify_ok

pytestmark = pytest.mark.integration

MODES = [
    "red-holds-either-way",
    "red-checks-where-it-holds",
    "red-finally-returns",
    "red-helper-named-check",
]


@pytest.mark.parametrize("mode", MODES)
def test_a_red_test_that_cannot_fail_is_refused_before_the_wrong_code_passes_it(
    tmp_path_factory: pytest.TempPathFactory, mode: str
) -> None:
    root = _new_project(tmp_path_factory, mode)
    try:
        configure(root, navigator=mode, driver="wrong", repair_attempts=0)
        result = consort("drive", cwd=root, timeout=600)
        assert result.returncode == 3, result.stdout + result.stderr
        new = events(root)
        failed = [e for e in new if e["type"] == "red.failed"]
        assert failed, [e["type"] for e in new]
        assert all(
            any("asserts nothing that can fail" in r for r in e["data"]["reasons"]) for e in failed
        ), [e["data"]["reasons"] for e in failed]
        assert not any(e["type"] in ("red.verified", "green.verified") for e in new)
        verify_ok(root)
    finally:
        destroy_project_cluster(root)
