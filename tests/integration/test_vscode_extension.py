"""The VS Code extension's tests, run by Node's own test runner (`node --test`) from here so that
the README's test command covers them: its plain modules with real child processes of small
scripts (test/unit), then the same modules against the real consort on a real project waiting at
its design gate (test/consort). VS Code itself is not run: the glue in src/extension.ts is not
exercised. scripts/vscode-extension.sh installs the pinned TypeScript and vsce first."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_dashboard import at_design_gate  # noqa: F401

pytestmark = pytest.mark.integration

EXTENSION = Path(__file__).resolve().parents[2] / "editors" / "vscode"
NODE_TIMEOUT_S = 600  # the whole file; each Node test waits 120 s at most for a hang
SUMMARY = re.compile(r"^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$", re.MULTILINE)


def _node() -> str:
    node = shutil.which("node")
    assert node is not None, "Node.js is needed (on Debian: apt-get install nodejs npm)"
    return node


@pytest.fixture(scope="module")
def built() -> Path:
    """The extension compiled afresh from its sources with its pinned TypeScript."""
    tsc = EXTENSION / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), "run scripts/vscode-extension.sh (npm ci in editors/vscode)"
    shutil.rmtree(EXTENSION / "out" / "test", ignore_errors=True)
    done = subprocess.run(
        [_node(), str(tsc), "-p", str(EXTENSION)],
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return EXTENSION / "out" / "test"


def node_tests(folder: Path, env: dict[str, str] | None = None) -> dict[str, int]:
    environment = {k: v for k, v in os.environ.items() if k != "CONSORT_TASK"}
    environment.update(env or {})
    done = subprocess.run(
        [_node(), "--test", "--test-reporter=tap", f"{folder}{os.sep}"],
        cwd=EXTENSION,
        env=environment,
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
        check=False,
    )
    counts = {name: int(n) for name, n in SUMMARY.findall(done.stdout)}
    shown = done.stdout[-20000:] + done.stderr[-5000:]
    assert done.returncode == 0, shown
    assert counts.get("fail") == 0 and counts.get("cancelled") == 0, shown
    assert counts.get("skipped") == 0 and counts.get("todo") == 0, shown
    assert counts.get("pass", 0) > 0 and counts["pass"] == counts.get("tests"), shown
    return counts


def test_the_extensions_modules_pass_their_node_tests(built):
    counts = node_tests(built / "unit")
    assert counts["pass"] >= 30


def test_the_extensions_modules_work_with_the_real_consort(built, at_design_gate):  # noqa: F811
    consort_bin = Path(sys.executable).parent / "consort"
    assert consort_bin.exists(), consort_bin
    counts = node_tests(
        built / "consort",
        {"CONSORT_BIN": str(consort_bin), "CONSORT_TEST_PROJECT": str(at_design_gate)},
    )
    assert counts["pass"] == 6
