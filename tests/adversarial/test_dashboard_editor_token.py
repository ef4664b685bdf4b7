"""Someone other than the editor's person tries to get the token that `consort dashboard
--editor` hands the editor: by sending its output to a file (which would put the token on
disk), by asking for it at a terminal, or from inside an agent turn. None of them gets one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dashboard_process import editor_dashboard
from tests.integration.test_dashboard import at_design_gate, ledger_lines  # noqa: F401
from tests.integration.test_design_lane import KEY

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 120


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "CONSORT_TASK"}


def test_editor_output_redirected_to_a_file_is_refused(at_design_gate, tmp_path):  # noqa: F811
    log = tmp_path / "dashboard.log"
    with log.open("wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "consort", "dashboard", "--editor", "--port", "0"],
            cwd=at_design_gate,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.PIPE,
            timeout=START_TIMEOUT_S,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    assert "standard output is a file" in done.stderr.decode()
    assert log.read_bytes() == b""


def test_editor_mode_at_a_terminal_is_refused(at_design_gate):  # noqa: F811
    master, slave = os.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "consort", "dashboard", "--editor", "--port", "0"],
            cwd=at_design_gate,
            env=_env(),
            stdin=slave,
            stdout=slave,
            stderr=subprocess.PIPE,
            timeout=START_TIMEOUT_S,
            check=False,
        )
    finally:
        os.close(slave)
        os.close(master)
    assert done.returncode == 2
    assert "standard output is a terminal" in done.stderr.decode()


def test_an_agent_turn_in_editor_mode_gets_no_token(at_design_gate):  # noqa: F811
    task: Path = at_design_gate / ".consort" / "turns" / "task.json"
    with editor_dashboard(at_design_gate, env={"CONSORT_TASK": str(task)}) as dash:
        assert dash.token is None
        assert "agent turn" in dash.text()
        response = dash.decide("approve", {"gate": "design", "subject": KEY}, token="anything")
        assert response.status_code == 403 and response.json()["refused"] == "READ_ONLY"
    assert not [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]
