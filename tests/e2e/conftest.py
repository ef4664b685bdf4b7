"""The finished StockFlow demo, made once per test session and shared by the tests that only
read it (the demo's own checks, the dashboard's and the MCP server's views of it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

# One session-wide Chromium for every browser test, registered here once: a module that imported
# the fixture itself would get a Playwright of its own, and a second sync Playwright cannot
# start while the first one's event loop runs.
from tests.browser import browser  # noqa: F401
from tests.helpers import consort
from tests.integration.conftest import destroy_project_cluster

# A whole demo is minutes of work, many more on a busy machine: these limits only catch a hang,
# well above the suite's default per-test limit, which a loaded machine can exceed. A module
# whose tests use `demo` sets `pytest.mark.timeout(2 * DEMO_TIMEOUT_S)`: its first test may be
# the one that makes it.
DEMO_TIMEOUT_S = 1800


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The finished demo's folder and what `consort demo` printed. Do not change it."""
    root = tmp_path_factory.mktemp("demo") / "stockflow"
    result = consort("demo", str(root), cwd=root.parent, timeout=DEMO_TIMEOUT_S)
    yield root, result.stdout + result.stderr
    destroy_project_cluster(root)
    assert result.returncode == 0, result.stdout + result.stderr
