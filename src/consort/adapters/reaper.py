"""Every process started below Consort stays Consort's to find, however it left its parent.

A process group, a session or a variable in the environment tells which processes a child
started only as long as they keep them: a process that double-forks, calls `setsid` and
re-executes itself with an empty environment keeps none. What it cannot leave is its ancestry.
While a `Reaper` is held, Consort's process is a child subreaper (Linux's
`PR_SET_CHILD_SUBREAPER`): an orphan below it is re-parented to Consort instead of to init, so
every process started in the block is a descendant of Consort until it ends. `end` kills each one
that is still running and was not there when the block began, and reaps those re-parented to
Consort. A process can still reach past this only by asking a process that was never Consort's
(a terminal multiplexer's server, a scheduler's daemon) to start one for it.

Consort's own work beside the block (another thread's git call or contained run: an
experiment reads its RED schema while an approach's turn runs) is spared by what a process
cannot take on: Consort's own session (a process is born into its parent's session or makes a
new one, and never joins another's), or the token of a contained run of Consort's still running
(`proc.live_run_markers`; a process that copied one ends with that run), and whatever runs
below those. A sandboxed turn needs none of this: its PID namespace ends every process inside
it with it. Without /proc (not Linux) it finds nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType

from consort.adapters import proc

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
_ROUNDS = 100  # kill rounds: a process may fork once more before its SIGKILL lands


def _prctl() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    except OSError:
        return None
    prctl: Callable[..., int] | None = getattr(libc, "prctl", None)
    return prctl


def _is_subreaper() -> bool:
    prctl = _prctl()
    if prctl is None:
        return False
    value = ctypes.c_int(0)
    prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)
    return bool(value.value)


def _set_subreaper(on: bool) -> bool:
    prctl = _prctl()
    return prctl is not None and prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


# Reapers held at once (the process's setting is one for every thread): the first sets it,
# the last puts it back as it found it.
_held = 0
_found_set = False
_held_lock = threading.Lock()


def _hold() -> None:
    global _held, _found_set  # noqa: PLW0603 -- one setting per process, counted here
    with _held_lock:
        if _held == 0:
            _found_set = _is_subreaper()
            if not _found_set:
                _set_subreaper(True)
        _held += 1


def _release() -> None:
    global _held  # noqa: PLW0603 -- see _hold
    with _held_lock:
        _held -= 1
        if _held == 0 and not _found_set:
            _set_subreaper(False)


def _processes() -> dict[int, tuple[int, str, bool]]:
    """pid -> (parent pid, start time, zombie) of every process /proc shows."""
    found: dict[int, tuple[int, str, bool]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(entry.path, "stat").read_bytes()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces and parentheses.
            fields = stat[stat.rfind(b")") + 2 :].split()
            if len(fields) > 19:
                found[int(entry.name)] = (int(fields[1]), fields[19].decode(), fields[0] == b"Z")
    return found


def descendants(of: int) -> dict[int, tuple[str, bool]]:
    """pid -> (start time, zombie) of every process below `of`."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found: dict[int, tuple[str, bool]] = {}
    stack = list(children.get(of, ()))
    while stack:
        pid = stack.pop()
        if pid in found or pid not in table:
            continue
        found[pid] = (table[pid][1], table[pid][2])
        stack += children.get(pid, ())
    return found


class Reaper:
    """Held around a child's whole life: `end` finds what it left running, however hidden."""

    def __init__(self) -> None:
        self.me = os.getpid()
        self._before: set[tuple[int, str]] = set()

    def __enter__(self) -> Reaper:
        _hold()
        self._before = {(pid, start) for pid, (start, _) in descendants(self.me).items()}
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        try:
            self.end()
        finally:
            _release()

    def end(self, *, spare: int | None = None) -> int:
        """Kill every process started in the block that still runs (not `spare`, the child
        whose own end its caller waits for, nor Consort's own work); how many there were."""
        ended: set[tuple[int, str]] = set()
        for _ in range(_ROUNDS):
            below = descendants(self.me)
            consorts = self._consorts(below)
            new = {
                (pid, start): zombie
                for pid, (start, zombie) in below.items()
                if (pid, start) not in self._before and pid != spare and pid not in consorts
            }
            running = [key for key, zombie in new.items() if not zombie]
            self._reap(
                pid for (pid, start), zombie in new.items() if zombie and (pid, start) in ended
            )
            if not running:
                break
            for pid, start in running:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                ended.add((pid, start))
            time.sleep(0.01)  # SIGKILL is delivered asynchronously
        return len(ended)

    def _consorts(self, below: dict[int, tuple[str, bool]]) -> set[int]:
        """The processes of `below` that are Consort's own work, and everything below them."""
        session = os.getsid(0)
        markers = proc.live_run_markers()
        table = _processes()
        own = {
            pid
            for pid in below
            if _session(pid) == session or (markers and _carries_any(pid, markers))
        }
        spared: set[int] = set()
        for pid in below:
            chain = pid
            while chain in below:
                if chain in own:
                    spared.add(pid)
                    break
                chain = table.get(chain, (0, "", False))[0]
        return spared

    def _reap(self, zombies: Iterable[int]) -> None:
        """Collect the exit of each process this reaper killed that was re-parented to Consort
        (an orphan: no Popen of Consort's collects it). A dead process it did not kill is left
        to whoever started it."""
        table = _processes()
        for pid in zombies:
            if table.get(pid, (0, "", False))[0] == self.me:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def _carries_any(pid: int, markers: frozenset[bytes]) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return not markers.isdisjoint(environ.split(b"\0"))
