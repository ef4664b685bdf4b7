"""A server killed with `kill -9` is not taken for a running one, and the next command that needs
it starts it again.

A killed process stays a zombie until its parent reaps it; on a machine whose init never reaps
(or under a parent that does not), its pid still "exists" for `kill -0`, and PostgreSQL itself
then refuses to start ("lock file postmaster.pid already exists"). Here the test process makes
itself the server's reaper (PR_SET_CHILD_SUBREAPER) and does not reap it: the worst case, made
on purpose.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.helpers import consort, ok

pytestmark = pytest.mark.integration

PR_SET_CHILD_SUBREAPER = 36


def _status(root: Path) -> dict:
    return json.loads(ok(consort("db", "status", "--json", cwd=root)))


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2]


@pytest.fixture
def reaper() -> Iterator[list[int]]:
    """This process adopts orphans (the server pg_ctl leaves behind) and reaps none of them
    until the test ends; then the killed ones the test lists (and only those: a pid another
    fixture waits for is not this fixture's to take)."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    killed: list[int] = []
    try:
        yield killed
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        for pid in killed:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def test_a_killed_server_left_a_zombie_is_started_again(
    fresh_project: Path, reaper: list[int]
) -> None:
    root = fresh_project
    ok(consort("db", "stop", cwd=root))
    ok(consort("db", "start", cwd=root))
    first = _status(root)
    server = first["pid"]
    assert os.getppid() != server and Path(f"/proc/{server}").exists()
    # a session open on main, as an application's would be: its backend must end first
    url = ok(consort("db", "url", "main", cwd=root)).strip()
    held = psycopg.connect(url, autocommit=True)
    os.kill(server, signal.SIGKILL)
    reaper.append(server)
    deadline = time.monotonic() + 60
    while _state(server) != "Z":
        assert time.monotonic() < deadline, "the killed server never died"
        time.sleep(0.05)

    status = _status(root)
    assert status["running"] is False and status["pid"] is None
    # any command that needs the database starts it again
    listed = consort("branch", "create", "after-the-kill", cwd=root)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    again = _status(root)
    assert again["running"] is True and again["pid"] != server
    assert _state(server) == "Z"  # still unreaped: the new server started beside it
    with pytest.raises(psycopg.OperationalError):
        held.execute("SELECT 1")
    held.close()
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_db_start_after_a_kill_starts_it(fresh_project: Path, reaper: list[int]) -> None:
    root = fresh_project
    ok(consort("db", "stop", cwd=root))
    ok(consort("db", "start", cwd=root))
    server = _status(root)["pid"]
    os.kill(server, signal.SIGKILL)
    reaper.append(server)
    deadline = time.monotonic() + 60
    while _state(server) != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    started = ok(consort("db", "start", cwd=root))
    assert "already running" not in started
    assert _status(root)["running"] is True
