"""A real Chromium (the distribution's, which `.ci/run` installs) driven by Playwright.

Outside CI a machine without Chromium or Playwright skips the browser tests; in CI (CI=true)
their absence is a failure, never a skip. Screenshots go to `CONSORT_TEST_ARTIFACTS` (default
`.test-artifacts/` in the repository), kept as the tests' artefacts.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    found = os.environ.get("CONSORT_CHROMIUM")
    if found:
        return found
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


def artefacts() -> Path:
    folder = Path(os.environ.get("CONSORT_TEST_ARTIFACTS", ROOT / ".test-artifacts"))
    folder = folder / "dashboard"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        executable = None
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("CI needs Chromium and Playwright for the browser tests (see .ci/run)")
        pytest.skip("no Chromium or no Playwright on this machine")
    with sync_playwright() as playwright:
        # --no-sandbox: Chromium's own sandbox needs user namespaces it may not get as root
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()
