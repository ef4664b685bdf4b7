"""A background queue does its items one after another on one daemon thread, in the order given;
`finish` waits for all of them, an item whose work raises does not stop the ones after it, and
the interpreter's exit waits for the work handed over."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from consort.adapters.background import Background


def _threads(name: str) -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == name]


def test_items_are_done_in_order_and_finish_waits_for_them() -> None:
    started, release = threading.Event(), threading.Event()
    done: list[int] = []

    def work(item: int) -> None:
        started.set()
        release.wait()
        done.append(item)

    queue: Background[int] = Background(work, name="consort-test-order", timeout=120.0)
    for item in (1, 2, 3):
        queue.submit(item)
    opener = threading.Thread(target=lambda: (started.wait(), release.set()))
    opener.start()
    queue.finish()  # the first item is still held back when this starts waiting
    opener.join()
    assert done == [1, 2, 3]


def test_one_daemon_thread_does_all_the_items() -> None:
    release = threading.Event()
    queue: Background[int] = Background(
        lambda _: release.wait(), name="consort-test-thread", timeout=120.0
    )
    queue.submit(1)
    queue.submit(2)
    threads = _threads("consort-test-thread")
    release.set()
    queue.finish()
    assert len(threads) == 1 and threads[0].daemon


def test_an_item_that_raises_does_not_stop_the_ones_after_it() -> None:
    done: list[str] = []

    def work(item: str) -> None:
        if item == "bad":
            raise OSError("cannot")
        done.append(item)

    queue: Background[str] = Background(work, name="consort-test-errors", timeout=120.0)
    queue.submit("bad")
    queue.submit("good")
    queue.finish()
    assert done == ["good"]


def test_finish_gives_up_after_its_timeout() -> None:
    release = threading.Event()
    done: list[int] = []

    def work(item: int) -> None:
        release.wait()
        done.append(item)

    queue: Background[int] = Background(work, name="consort-test-timeout", timeout=120.0)
    queue.submit(1)
    queue.finish(timeout=0)  # returns although the item is held back
    assert done == []
    release.set()
    queue.finish()
    assert done == [1]


def test_the_interpreter_exit_waits_for_the_work_handed_over(tmp_path: Path) -> None:
    marker = tmp_path / "done"
    script = textwrap.dedent(
        f"""
        import atexit, threading, time
        from pathlib import Path
        from consort.adapters.background import Background

        release = threading.Event()

        def work(item):
            release.wait()  # held back until the interpreter is exiting
            time.sleep(0.5)
            Path(item).write_text("done")

        queue = Background(work, name="consort-test-exit", timeout=120.0)
        queue.submit({str(marker)!r})
        atexit.register(release.set)  # runs before the queue's own exit handler
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert marker.read_text() == "done"
