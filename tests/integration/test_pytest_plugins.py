"""`[test] plugins` with the pytest Consort runs: only the listed plugins are loaded.

A real pytest in a child process, on a one-test suite that reports whether pytest-timeout (one
of Consort's test tools, so installed here) was loaded: with autoloading, as a plain `pytest`
does; with an empty list, not; with it listed, again.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from consort.adapters.tdd.invocation import plugin_options

pytestmark = pytest.mark.integration

SUITE = """
import sys


def test_which_plugins():
    print("timeout plugin loaded:", "pytest_timeout" in sys.modules)
"""


def _timeout_loaded(tmp_path: Path, plugins: list[str] | None) -> bool:
    (tmp_path / "test_plugins.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
            *plugin_options(plugins),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return "timeout plugin loaded: True" in result.stdout


def test_only_the_listed_plugins_are_loaded(tmp_path: Path) -> None:
    assert _timeout_loaded(tmp_path, None)
    assert not _timeout_loaded(tmp_path, [])
    assert _timeout_loaded(tmp_path, ["pytest_timeout"])
