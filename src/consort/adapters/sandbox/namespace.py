"""A running sandbox, seen from outside: its PID namespace, its members, and its teardown.

bubblewrap reports on a status descriptor, as JSON documents, first the host PID of the
sandbox's init and the inode of its PID namespace, then the exit code of the program. Every
process in that namespace is the turn's, whatever session or group it made for itself (a
double-forked `setsid` daemon included), and when the namespace's init ends the kernel ends them
all. So a turn is over when no process of its namespace is left, and that is checked, not assumed.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
SETUP_TIMEOUT_S = 60.0
REAP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Started:
    init_pid: int  # host PID of the namespace's PID 1
    pid_namespace: int  # inode of the namespace


class StatusReader:
    """bubblewrap's --json-status-fd stream, read from the parent's end of a pipe."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = b""
        self._closed = False

    def started(self, timeout_s: float = SETUP_TIMEOUT_S) -> Started | None:
        """The first document; None when bubblewrap ended (or stalled) before the sandbox ran."""
        document = self._next(timeout_s)
        if document is None:
            return None
        pid, space = document.get("child-pid"), document.get("pid-namespace")
        if not isinstance(pid, int) or not isinstance(space, int):
            return None
        return Started(pid, space)

    def exit_code(self) -> int | None:
        """The program's exit code, once bubblewrap has ended (None if it never said)."""
        while True:
            document = self._next(0.0)
            if document is None:
                return None
            if "exit-code" in document:
                code = document["exit-code"]
                return code if isinstance(code, int) else None

    def close(self) -> None:
        if not self._closed:
            os.close(self._fd)
            self._closed = True

    def _next(self, timeout_s: float) -> dict[str, object] | None:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            if self._closed:
                return None
            remaining = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self._fd, 4096)
            if not chunk:
                self.close()
                if not self._buffer.strip():
                    return None
                self._buffer += b"\n"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            document = json.loads(line)
        except ValueError:
            return None
        return document if isinstance(document, dict) else None


def members(namespace: int) -> list[int]:
    """Host PIDs of the live (not zombie) processes in PID namespace `namespace`."""
    wanted = f"pid:[{namespace}]"
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "pid") != wanted:
                continue
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # ended while we looked, or not ours to look at
        state = stat[stat.rfind(")") + 2 :].split(maxsplit=1)[:1]
        if state and state[0] not in {"Z", "X"}:
            found.append(int(entry.name))
    return found


def end(started: Started, grace_s: float, still_running: bool) -> None:
    """End every process of the sandbox: SIGTERM (unless the program already ended), a grace,
    then SIGKILL of the namespace's init, which takes every other member with it.

    Once the init is gone the namespace is empty: the kernel kills every other member when its
    init dies, and the init's exit waits for them. So when the program ended by itself (and
    with it the init), one look at the init says it all, without scanning every process.
    """
    if not still_running and not _in_namespace(started.init_pid, started.pid_namespace):
        return
    if still_running:
        for pid in members(started.pid_namespace):
            if pid != started.init_pid:
                _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _others(started):
            time.sleep(0.05)
    if members(started.pid_namespace):
        _signal(started.init_pid, signal.SIGKILL)
    deadline = time.monotonic() + REAP_TIMEOUT_S
    while members(started.pid_namespace) and time.monotonic() < deadline:
        time.sleep(0.02)


def _in_namespace(pid: int, namespace: int) -> bool:
    """Whether `pid` is a live (not zombie) process of `namespace`."""
    entry = PROC / str(pid)
    try:
        if os.readlink(entry / "ns" / "pid") != f"pid:[{namespace}]":
            return False
        stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :][:1] not in {"Z", "X", ""}


def _others(started: Started) -> bool:
    return any(pid != started.init_pid for pid in members(started.pid_namespace))


def _signal(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)
