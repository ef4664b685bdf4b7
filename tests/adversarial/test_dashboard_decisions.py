"""Someone other than the person at the terminal tries to decide a gate through the dashboard:
a page on another origin or behind a rebound DNS name, a process that reads what the dashboard
prints when it has no terminal, an agent turn starting its own dashboard, or a token hunted for
on disk, in the ledger and in the process table. The design gate stays open to all of them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.dashboard_process import running_dashboard
from tests.integration.test_dashboard import at_design_gate, ledger_lines  # noqa: F401
from tests.integration.test_design_lane import KEY

pytestmark = pytest.mark.integration

DESIGN = {"gate": "design", "subject": KEY, "note": "not mine to give"}


def approvals(root: Path) -> list[dict]:
    return [e for e in ledger_lines(root) if e["type"] in ("gate.approved", "gate.rejected")]


def test_a_rebound_dns_name_reads_nothing_and_decides_nothing(at_design_gate):  # noqa: F811
    with running_dashboard(at_design_gate, terminal=True) as dash, dash.client() as client:
        host = {"host": f"attacker.example:{dash.port}"}
        for path in ("/", "/api/overview", "/api/verify", "/api/events", "/static/app.js"):
            response = client.get(path, headers=host)
            assert response.status_code == 403, path
            assert KEY not in response.text
        # even with the token, a request naming another host is refused
        attempt = dash.decide(
            "approve",
            DESIGN,
            token=dash.token,
            host=host["host"],
            origin=f"http://attacker.example:{dash.port}",
        )
        assert attempt.status_code == 403
    assert approvals(at_design_gate) == []


def test_a_leaked_token_is_useless_from_another_origin(at_design_gate):  # noqa: F811
    with running_dashboard(at_design_gate, terminal=True) as dash:
        for origin in (
            "http://127.0.0.1:1",
            "null",
            "http://localhost.attacker.example",
            f"http://127.0.0.1:{dash.port}.attacker.example",
            "file://",
        ):
            for action in ("approve", "reject"):
                response = dash.decide(action, DESIGN, token=dash.token, origin=origin)
                assert response.status_code == 403, (origin, action)
    assert approvals(at_design_gate) == []


def test_without_a_terminal_no_token_exists_to_steal(at_design_gate, tmp_path):  # noqa: F811
    # stdin is a terminal but stdout goes to a file: printing a token there would write it to
    # disk, so none is made, and nothing decides
    master, slave = os.openpty()
    log = tmp_path / "dashboard.log"
    env = {k: v for k, v in os.environ.items() if k != "CONSORT_TASK"}
    with log.open("wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "consort", "dashboard", "--port", "0"],
            cwd=at_design_gate,
            env=env,
            stdin=slave,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    os.close(slave)
    try:
        deadline = time.monotonic() + 120
        while "Read-only" not in log.read_text() and time.monotonic() < deadline:
            assert child.poll() is None, log.read_text()
            time.sleep(0.1)
        text = log.read_text()
        assert "Read-only" in text and "Token" not in text
    finally:
        child.terminate()
        child.wait(timeout=30)
        os.close(master)
    with running_dashboard(at_design_gate, terminal=False) as dash:
        for guess in ("", "null", "undefined", "token", "x" * 32):
            response = dash.decide("approve", DESIGN, token=guess)
            assert response.status_code == 403 and response.json()["refused"] == "READ_ONLY"
    assert approvals(at_design_gate) == []


def test_an_agent_turn_that_starts_a_dashboard_gets_no_token(at_design_gate):  # noqa: F811
    task = at_design_gate / ".consort" / "turns" / "task.json"
    with running_dashboard(at_design_gate, terminal=True, env={"CONSORT_TASK": str(task)}) as dash:
        assert dash.token is None
        assert "inside an agent turn" in dash.text()
        response = dash.decide("approve", DESIGN, token="anything")
        assert response.status_code == 403
    assert approvals(at_design_gate) == []


def test_the_token_is_nowhere_but_the_terminal_it_was_printed_on(at_design_gate):  # noqa: F811
    with running_dashboard(at_design_gate, terminal=True) as dash:
        token = dash.token
        assert token
        with dash.client() as client:  # the page and its views never carry it
            for path in ("/", "/api/overview", "/api/verify", "/static/app.js"):
                assert token not in client.get(path).text
        refused = dash.decide("approve", DESIGN, token=token, origin="http://127.0.0.1:1")
        assert token not in refused.text
        proc = Path(f"/proc/{dash.process.pid}")
        assert token.encode() not in (proc / "cmdline").read_bytes()
        assert token.encode() not in (proc / "environ").read_bytes()
        rejected = dash.decide(
            "reject", {**DESIGN, "note": "the ux misses the SKU page"}, token=token
        )
        assert rejected.status_code == 200, rejected.text
        assert token not in rejected.text
        output = dash.text()
    assert output.count(token) == 1  # the announcement, nothing after (no access log)
    (decision,) = approvals(at_design_gate)
    assert decision["type"] == "gate.rejected" and decision["actor"] == "human"
    needle = token.encode()
    for path in at_design_gate.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert needle not in path.read_bytes(), f"the token is in {path}"
