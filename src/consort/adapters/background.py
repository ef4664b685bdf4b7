"""Work done behind the caller, on one daemon thread of this process.

Consort hands over work the caller need not wait for (removing an export's files, dropping a
throwaway database) to a `Background` queue: `submit` returns at once, a thread started with
the first item does the items one after another, in the order given, and `finish` waits until
every item handed over is done. `finish` also runs when the interpreter exits, so a process
does not end with work half done unless it is killed. An item whose work raises is dropped:
whatever it left behind is for the clean-up that also follows a crash.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """Items waiting for `work`, done one at a time on a daemon thread named `name`; `finish`
    waits at most `timeout` seconds unless told otherwise."""

    def __init__(self, work: Callable[[T], None], *, name: str, timeout: float) -> None:
        self._work = work
        self._name = name
        self._timeout = timeout
        self._pending: list[T] = []
        self._busy = 0
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, item: T) -> None:
        with self._changed:
            self._pending.append(item)
            self._changed.notify_all()
            if self._thread is None:
                atexit.register(self.finish)
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()

    def finish(self, timeout: float | None = None) -> None:
        """Wait (at most `timeout` seconds, the queue's own if not given) until every item
        handed over is done."""
        deadline = time.monotonic() + (self._timeout if timeout is None else timeout)
        with self._changed:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._pending:
                    self._changed.wait()
                item = self._pending.pop(0)
                self._busy += 1
            try:
                with contextlib.suppress(Exception):
                    self._work(item)
            finally:
                with self._changed:
                    self._busy -= 1
                    self._changed.notify_all()
