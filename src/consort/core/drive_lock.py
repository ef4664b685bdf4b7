"""One `consort drive` per project: the single-writer lock, `.consort/drive.lock`.

The lock is an advisory `flock` on the file, so the kernel releases it when its holder ends, even
by SIGKILL; the file also names the holder's pid while it runs, for the message a second drive
gets.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from consort.core.errors import ConsortError, ExitCode
from consort.core.fsutil import LockBusy, file_lock
from consort.core.layout import Layout


class WriterBusy(ConsortError):
    """Another `consort drive` holds the project; exit code 2."""

    def __init__(self, lock: Path, pid: int | None):
        holder = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(
            f"another `consort drive` is running on this project ({holder})",
            fix=f"wait for it to stop, or stop it; its lock is {lock}",
            code=ExitCode.USAGE,
        )
        self.pid = pid


@contextlib.contextmanager
def hold_writer(project_state_dir: Path) -> Iterator[None]:
    """Hold the project's single-writer lock for as long as the block runs.

    Raises WriterBusy (exit code 2) at once if another process holds it. The lock is released
    when the block ends or the process dies, even by SIGKILL.
    """
    lock = Layout(project_state_dir).drive_lock
    held = contextlib.ExitStack()
    try:
        held.enter_context(file_lock(lock, blocking=False))
    except LockBusy:
        raise WriterBusy(lock, _read_pid(lock)) from None
    with held:
        _write_pid(lock, os.getpid())
        try:
            yield
        finally:
            _write_pid(lock, None)


def _write_pid(lock: Path, pid: int | None) -> None:
    # Written in place, never replaced: the lock belongs to this very file (inode).
    with lock.open("r+", encoding="ascii") as handle:
        handle.truncate(0)
        if pid is not None:
            handle.write(f"{pid}\n")
        handle.flush()


def _read_pid(lock: Path) -> int | None:
    try:
        text = lock.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
