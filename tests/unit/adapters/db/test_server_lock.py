"""postmaster.pid names the server by its pid and the time it started: a pid the kernel has
given to another process since the server was killed does not count as the server running, and
its lock is cleared so that the server can start again."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from consort.adapters import proc
from consort.adapters.db.cluster import DATA_DIR, clear_dead_lock, server_state


def _lock(home: Path, pid: int, started: float) -> Path:
    data = home / DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    path = data / "postmaster.pid"
    # pid, data folder, start time, port, socket folder, listen address, shared memory
    path.write_text(f"{pid}\n{data}\n{int(started)}\n5433\n\n127.0.0.1\n  0   0\nready\n")
    return path


def test_a_live_process_started_when_the_lock_says_is_the_server(tmp_path: Path) -> None:
    began = proc.started_at(os.getpid())
    assert began is not None
    _lock(tmp_path, os.getpid(), began + 1)
    state = server_state(tmp_path)
    assert state.running
    assert state.pid == os.getpid()
    assert state.port == 5433


def test_a_reused_pid_does_not_count_as_the_server_running(tmp_path: Path) -> None:
    # The lock of a server started an hour before this process, whose pid this process has now.
    began = proc.started_at(os.getpid())
    assert began is not None
    lock = _lock(tmp_path, os.getpid(), began - 3600)
    assert not server_state(tmp_path).running
    assert clear_dead_lock(tmp_path, wait_s=1)
    assert not lock.exists()


def test_a_lock_written_before_its_process_started_is_not_that_process(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        _lock(tmp_path, sleeper.pid, time.time() - 600)
        assert not server_state(tmp_path).running
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_start_time_of_a_process_is_when_it_began() -> None:
    before = time.time()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        began = proc.started_at(sleeper.pid)
        assert began is not None
        # clock ticks and the boot time's whole seconds round it: a second either way
        assert before - 1 <= began <= time.time() + 1
    finally:
        sleeper.kill()
        sleeper.wait()
    assert proc.started_at(sleeper.pid) is None
