"""The reaper finds what a child left running by ancestry alone: real processes, no mocks."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from consort.adapters import reaper
from consort.adapters.proc import is_alive as proc_alive
from consort.adapters.reaper import Reaper
from tests.helpers import processes_naming

# Double fork, new session, then an empty environment: no group, session or variable leads back.
HIDDEN = """
import os, sys, time
if os.fork():
    os.wait(); sys.exit(0)
os.setsid()
if os.fork():
    os._exit(0)
os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", sys.argv[1]], {})
"""


def test_a_process_that_left_its_session_and_environment_is_found_and_ended() -> None:
    marker = f"reaper-{time.monotonic_ns()}"
    with Reaper() as held:
        child = subprocess.Popen([sys.executable, "-c", HIDDEN, marker], env={})
        child.wait()
        deadline = time.monotonic() + 30
        while not processes_naming(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_naming(marker), "the hidden process never started"
        assert held.end(spare=child.pid) == 1
    assert processes_naming(marker) == []


def test_a_child_that_leaves_nothing_behind_counts_nothing() -> None:
    with Reaper() as held:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        assert held.end() == 0


def test_processes_there_before_are_not_ended() -> None:
    before = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with Reaper() as held:
            assert held.end() == 0
        assert before.poll() is None
    finally:
        before.kill()
        before.wait()


def test_the_subreaper_setting_is_put_back() -> None:
    was = reaper._is_subreaper()
    with Reaper():
        assert reaper._is_subreaper()
    assert reaper._is_subreaper() is was


def test_consorts_own_work_beside_the_block_is_spared_and_a_new_session_is_not() -> None:
    sleep = [sys.executable, "-c", "import time; time.sleep(600)"]
    with Reaper() as held:
        own = subprocess.Popen(sleep)  # Consort's session: another thread's git call, say
        apart = subprocess.Popen(sleep, start_new_session=True)  # an agent's, say
        try:
            deadline = time.monotonic() + 30
            while apart.pid not in reaper.descendants(held.me) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert held.end() == 1
            assert own.poll() is None
            assert not proc_alive(apart.pid)
        finally:
            own.kill()
            own.wait()


def test_a_contained_run_in_progress_is_spared_with_what_it_started(tmp_path) -> None:
    import threading

    from consort.adapters import proc

    started, go = tmp_path / "started", tmp_path / "go"
    script = (
        "import os, pathlib, subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
        " start_new_session=True)\n"
        f"pathlib.Path({str(started)!r}).write_text('x')\n"
        f"while not pathlib.Path({str(go)!r}).exists():\n"
        "    time.sleep(0.05)\n"
    )
    results: list[proc.Contained] = []
    with Reaper() as held:
        run = threading.Thread(
            target=lambda: results.append(
                proc.run_contained(
                    [sys.executable, "-c", script], cwd=tmp_path, env={}, timeout=120, grace=1
                )
            )
        )
        run.start()
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists()
        assert held.end() == 0  # the run's, which ends them itself
        go.write_text("x")
        run.join()
    (result,) = results
    assert result.returncode == 0 and result.leftovers == 1


@pytest.mark.parametrize("reap", [True, False])
def test_a_background_app_outside_a_sandbox_takes_what_it_hid_with_it(tmp_path, reap) -> None:
    from consort.adapters import proc

    marker = f"reaper-app-{time.monotonic_ns()}"
    app = HIDDEN.replace("os.wait(); sys.exit(0)", "os.wait(); time.sleep(600)")
    try:
        with proc.background(
            [sys.executable, "-c", app, marker],
            cwd=tmp_path,
            env={},
            output=tmp_path / "log",
            reap=reap,
        ):
            deadline = time.monotonic() + 30
            while len(processes_naming(marker)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(processes_naming(marker)) == 2  # the app, and the one it hid
        # Without the reaper, the hidden one outlives the app: what `reap` is for.
        assert len(processes_naming(marker)) == (0 if reap else 1)
    finally:
        for pid in processes_naming(marker):
            os.kill(pid, 9)
