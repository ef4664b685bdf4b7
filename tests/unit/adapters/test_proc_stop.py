"""`proc.run_contained(stop=...)`: another thread ends a contained run before its timeout."""

from __future__ import annotations

import threading
from pathlib import Path

from consort.adapters import proc


def _start(tmp_path: Path, script: str, stop: proc.Stop) -> tuple[threading.Thread, list]:
    done: list[proc.Contained] = []
    thread = threading.Thread(
        target=lambda: done.append(
            proc.run_contained(
                ["sh", "-c", script],
                cwd=tmp_path,
                env={"PATH": "/usr/bin:/bin"},
                timeout=600,
                stop=stop,
            )
        ),
        daemon=True,
    )
    thread.start()
    return thread, done


def test_a_stopped_run_ends_as_a_timed_out_one_with_its_processes(tmp_path: Path) -> None:
    stop = proc.Stop()
    # the run and a process of its own that would outlive it, both waiting far past the test
    thread, done = _start(tmp_path, "touch started; sleep 600 & sleep 600", stop)
    for _ in range(3000):
        if (tmp_path / "started").exists():
            break
        threading.Event().wait(0.1)
    stop.stop()
    thread.join(120)
    assert not thread.is_alive(), "the stop did not end the run"
    assert done[0].timed_out and done[0].returncode is None
    assert done[0].leftovers >= 1  # the background sleep was ended with it
    stop.close()


def test_a_run_that_ends_first_is_not_touched_by_a_later_stop(tmp_path: Path) -> None:
    stop = proc.Stop()
    thread, done = _start(tmp_path, "echo done; exit 3", stop)
    thread.join(120)
    stop.stop()
    stop.stop()  # twice is once
    assert done[0].returncode == 3 and not done[0].timed_out
    assert "done" in done[0].output
    stop.close()
