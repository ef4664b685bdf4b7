"""The database server is killed (SIGKILL) while a GREEN run's tests are about to start: the run
fails on a server that is gone, which is Consort's failure, not the driver's. The drive starts
the server again, repeats the run, records `server.restarted`, and uses up no attempt.

The kill is exact: CONSORT_CRASH_AT pauses the drive when the third sealed run (T1's GREEN, after
the story's baseline and T1's RED) is about to start its tests; the test kills the server, then
lets the drive go on. The project is the crash campaign's (bench/crash.py), whose every run
reaches its database.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crash_campaign import campaign, campaign_project, drive_interrupted_at_green
from tests.helpers import consort

pytestmark = pytest.mark.integration


@pytest.fixture
def counter(tmp_path: Path) -> Iterator[Path]:
    with campaign_project(tmp_path) as root:
        yield root


def _dead(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


def test_a_server_killed_during_green_is_restarted_and_the_run_repeated(counter: Path) -> None:
    root = counter

    def kill_the_server() -> None:
        server = campaign.server_pid(root)
        assert server is not None
        os.kill(server, signal.SIGKILL)
        deadline = time.monotonic() + 600
        while not _dead(server):
            assert time.monotonic() < deadline
            time.sleep(0.05)

    out = drive_interrupted_at_green(root, kill_the_server)
    assert "Consort's failure, not the agent's" in out

    events = campaign.events(root)
    restarted = [e for e in events if e["type"] == "server.restarted"]
    assert len(restarted) == 1, restarted
    assert restarted[0]["subject"] == "F1-counter/S1-answers/T1"
    assert restarted[0]["data"]["step"] == "green-S1-T1"
    assert restarted[0]["data"]["attempt"] == 1
    assert [e["type"] for e in events if e["type"].endswith(".failed")] == []
    greens = [e for e in events if e["type"] == "green.verified"]
    items = [e["subject"].rsplit("/", 1)[1] for e in greens]
    assert items == ["T1", "T2"]
    started = [e["data"] for e in events if e["type"] == "turn.started"]
    assert [t["attempt"] for t in started if t["step"] == "green"] == [1, 1]  # one turn per item
    verify = consort("verify", cwd=root)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert campaign.leftovers(root) == []


def test_the_drive_started_by_a_person_meets_a_server_killed_before_it(counter: Path) -> None:
    """The server was killed between two drives: the next drive starts it and goes on."""
    root = counter
    first = consort("drive", "--max-steps", "7", cwd=root, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    server = campaign.server_pid(root)
    assert server is not None
    os.kill(server, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while not _dead(server):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    done = consort("drive", cwd=root, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [e["type"] for e in campaign.events(root) if e["type"].endswith(".failed")] == []
    assert campaign.leftovers(root) == []
