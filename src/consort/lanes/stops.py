"""SIGTERM and SIGHUP stop `consort drive` the way Ctrl-C does.

Without this, either signal ends Consort at once: the turn's agent is left running (unsandboxed,
as an orphan) and the drive records nothing. Raised as a `KeyboardInterrupt`, the signal takes
the path Ctrl-C takes: the turn in progress is torn down (its sandbox, every process in it), its
attempt is not counted (the turn has no end in the ledger, so the next drive starts it again),
and the drive records that it was stopped and says how to resume.

Only the first signal interrupts; one that arrives while that stop is being carried out is
ignored, so that the teardown itself is never cut short and leaves nothing behind.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """`drive` was asked to stop by a signal other than Ctrl-C's."""

    def __init__(self, signum: int) -> None:
        self.signal = signal.Signals(signum)
        super().__init__(self.signal.name)


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only; nothing to install elsewhere
        return
    fired = False

    def on_stop(signum: int, _frame: FrameType | None) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, on_stop) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def interruption(exc: KeyboardInterrupt) -> str:
    """What stopped the drive: "SIGTERM", "SIGHUP", or "Ctrl-C"."""
    return exc.signal.name if isinstance(exc, Stopped) else "Ctrl-C"
