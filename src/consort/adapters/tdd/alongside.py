"""A run's test and migrate processes started at once, each held from its database till its turn.

Most of a test process's time before its first test is its interpreter importing the project
(FastAPI, pydantic and SQLAlchemy are about a second of CPU), and a run's migrate process pays
the same before its first migration: one after the other, a run waits for the child's copy,
then for both imports. Started at once, before the throwaway child is even made, both import
while the child is copied. Each process's gate (`sandbox.gate`, opened held) admits its
connections but carries none to the server until `release`: the migrate process's once the
child exists and what it holds was read, the test process's once the child is migrated, its
migrations read back and judged, and the suite's session count taken. Every statement of
either meets the child as it would have had the process started at its turn. Where the child
cannot be made, the migrations fail, never reach the child, or the run starts over on another
child, the processes are stopped and nothing they did is read.

The two processes share nothing they did not share one after the other: each has its own
sandbox (private /tmp, PID namespace, network), the frozen files are read-only to both, and the
export is the same folder. A process's own timeout counts from its release.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeAlias

from consort.adapters import proc
from consort.adapters.tdd.runbox import BoxedRun

# Runs a boxed process to its end: `launch(stop, timeout)`.
Launch: TypeAlias = Callable[[proc.Stop, float], proc.Contained]


class HeldProcess:
    """One run's test or migrate process, running in a thread of its own from the moment it is
    made, its connections held at its gate until `release`."""

    def __init__(
        self, boxed: BoxedRun, opened: contextlib.ExitStack, launch: Launch, limit: float
    ) -> None:
        """`launch(stop, timeout)` runs the boxed process to its end; `limit` is the longest it
        may run in all (its own timeout and the longest wait for its release); `opened`
        holds its sandbox and gate, closed when it is done."""
        self.boxed = boxed
        self._opened = opened
        self._stop = proc.Stop()
        self._result: proc.Contained | None = None
        self._error: BaseException | None = None
        self.released_at: float | None = None
        self._thread = threading.Thread(
            target=self._run, args=(launch, limit), daemon=True, name="consort-held-process"
        )
        self._thread.start()

    def _run(self, launch: Launch, limit: float) -> None:
        try:
            self._result = launch(self._stop, limit)
        except BaseException as exc:  # handed to the thread that waits for it
            self._error = exc

    def release(self) -> None:
        """Let the process reach its database from now on; its own timeout starts here."""
        self.released_at = time.monotonic()
        self.boxed.release()

    def result(self, timeout: float) -> proc.Contained:
        """The process's end, within `timeout` of its release: past it, it is stopped and ends
        as a timed-out run. Its sandbox and gate are closed either way."""
        self._thread.join(timeout)
        stopped = self._thread.is_alive()
        self._finish()
        if self._error is not None:
            raise self._error
        if self._result is None:  # the thread always leaves a result or an error
            raise RuntimeError("the test process's thread ended without a result")
        if stopped:
            return replace(self._result, returncode=None, timed_out=True)
        return self._result

    def run_released(self, timeout: float) -> proc.Contained:
        """`release`, then `result(timeout)`; the process is stopped however that ends."""
        try:
            self.release()
            return self.result(timeout)
        finally:
            self.cancel()

    def cancel(self) -> None:
        """Stop the process (when it still runs), wait for it, and close its sandbox and gate:
        nothing it did is read. Nothing happens after `result`."""
        self._finish()

    def _finish(self) -> None:
        self._stop.stop()
        self._thread.join()
        self._stop.close()
        self._opened.close()
