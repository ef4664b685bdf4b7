"""The `command` adapter: the agent is any program, run with the task's environment.

The program gets the working tree as its current folder and the protocol variables
(CONSORT_TASK, CONSORT_ROLE, CONSORT_STEP, DATABASE_URL for build turns); its stdout and stderr go
straight to files in the turn folder. It runs in the turn's sandbox (`consort.adapters.sandbox`):
a PID namespace of its own, so that everything it starts ends with it — on inactivity, on the
wall-clock cap, on Ctrl-C or SIGTERM, after it exits, and even when Consort is killed. Unsandboxed
(`sandbox = "off"`), it runs in a session and process group of its own, and that group is what
is stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO

from consort.adapters import proc
from consort.adapters.agents.base import KillReason, TurnOutcome, with_constants
from consort.adapters.agents.task import AgentReport, Task, TurnDir
from consort.adapters.reaper import Reaper
from consort.adapters.sandbox import namespace
from consort.adapters.sandbox.policy import SandboxedCommand, SandboxPolicy, TurnPaths
from consort.core.errors import ConsortError
from consort.core.vocabulary import SandboxUse

DEFAULT_INACTIVITY_TIMEOUT_S = 600.0
DEFAULT_WALL_CLOCK_TIMEOUT_S = 4 * 3600.0
DEFAULT_GRACE_PERIOD_S = 5.0
_SKIPPED_FOLDERS = frozenset({".git"})


@dataclass(frozen=True)
class Limits:
    inactivity_s: float = DEFAULT_INACTIVITY_TIMEOUT_S
    wall_clock_s: float | None = DEFAULT_WALL_CLOCK_TIMEOUT_S
    grace_s: float = DEFAULT_GRACE_PERIOD_S  # between SIGTERM and SIGKILL
    poll_s: float = 0.1


class SandboxFailed(ConsortError):
    """bubblewrap could not set up a turn's sandbox: Consort's problem, not a failed attempt."""


@dataclass(frozen=True)
class CommandAdapter:
    argv: tuple[str, ...]
    limits: Limits = Limits()
    env: Mapping[str, str] = field(default_factory=dict)  # constants for every turn
    sandbox: SandboxPolicy | None = None  # None: unsandboxed (recorded as such)

    def run(
        self, task: Task, turn_dir: TurnDir, workdir: Path, env: Mapping[str, str]
    ) -> TurnOutcome:
        env = with_constants(env, self.env)
        outcome = run_agent_process(
            self.argv,
            cwd=workdir,
            env=env,
            stdout_path=turn_dir.stdout_path,
            stderr_path=turn_dir.stderr_path,
            limits=self.limits,
            sandbox=sandbox_for(
                self.sandbox, self.argv, task, turn_dir=turn_dir, workdir=workdir, env=env
            ),
        )
        agent = AgentReport(adapter="command", program=self.argv[0], guard="post-turn diff")
        return replace(outcome, agent=agent)


def sandbox_for(
    policy: SandboxPolicy | None,
    command: Sequence[str],
    task: Task,
    *,
    turn_dir: TurnDir,
    workdir: Path,
    env: Mapping[str, str],
) -> SandboxedCommand | None:
    """The sandbox of this turn under `policy`; None when the policy runs it unsandboxed."""
    if policy is None:
        return None
    return policy.for_turn(
        TurnPaths(
            workdir=workdir,
            # A task that may write no file gets its tree read-only: the rule, enforced.
            tree_writable=bool(task.writable),
            turn_folder=turn_dir.path,
            inputs=tuple(task.inputs.values()),
            outputs=tuple(task.outputs.values()),
            env=env,
            command=tuple(command),
        )
    )


def run_agent_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdout_path: Path,
    stderr_path: Path,
    limits: Limits,
    sandbox: SandboxedCommand | None = None,
) -> TurnOutcome:
    """Run an agent to its end, streaming its output to files and stopping it when it stalls.

    This is the one place Consort uses Popen rather than `adapters.proc.run`: an agent turn can
    last long, its output must land on disk as it is produced (so a crash of Consort or a killed
    turn still leaves it to read), and deciding that it stalled means watching its output and
    its files while it runs — none of which run-to-completion can do.
    """
    started = time.monotonic()
    use = SandboxUse.OFF if sandbox is None else SandboxUse.BWRAP
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    status: namespace.StatusReader | None = None
    command = list(argv)
    pass_fds: tuple[int, ...] = ()
    if sandbox is not None:
        read_end, write_end = os.pipe()
        status = namespace.StatusReader(read_end)
        command = sandbox.argv(argv, status_fd=write_end)
        pass_fds = (write_end,)
    # Unsandboxed, the turn's processes are found by their ancestry: one that left the
    # process group and every variable of Consort's behind is still Consort's descendant.
    reaper = Reaper() if sandbox is None else None
    with (
        stdout_path.open("wb") as out,
        stderr_path.open("wb") as err,
        reaper if reaper is not None else contextlib.nullcontext(),
    ):
        try:
            child = subprocess.Popen(
                command,
                cwd=cwd,
                env=proc.with_owner(env),  # the owner marker: found after a crash
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # its own process group: killed as a whole
                pass_fds=pass_fds,
            )
        except OSError as exc:
            message = f"cannot run agent command `{' '.join(command)}` in {cwd}: {exc.strerror}"
            err.write(f"consort: {message}\n".encode())
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            return TurnOutcome(
                code,
                time.monotonic() - started,
                stdout_path,
                stderr_path,
                error=message,
                sandbox=use,
            )
        finally:
            for fd in pass_fds:
                os.close(fd)
        inside: namespace.Started | None = None
        try:
            if status is not None:
                inside = status.started()
                if inside is None:
                    _stop_group(child, limits.grace_s)
                    raise SandboxFailed(
                        "the turn's sandbox could not be set up: " + _tail(stderr_path),
                        fix="`consort doctor` checks the sandbox; the attempt was not counted",
                    )
            killed = _watch(child, (out, err), cwd, limits=limits, started=started)
        finally:
            # Also on Ctrl-C, SIGTERM or any error of ours: nothing of the agent may survive
            # Consort. In a sandbox, that is every process of its PID namespace; bubblewrap's
            # own process, alone in its group, goes after them.
            if inside is not None:
                namespace.end(inside, limits.grace_s, still_running=child.poll() is None)
            if inside is None or child.poll() is None:
                _stop_group(child, limits.grace_s)
            if status is not None:
                status.close()
            left = reaper.end(spare=child.pid) if reaper is not None else 0
    return TurnOutcome(
        child.returncode if child.returncode is not None else -signal.SIGKILL,
        time.monotonic() - started,
        stdout_path,
        stderr_path,
        killed=killed,
        sandbox=use,
        left_running=left,
    )


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "bubblewrap said nothing"
    return lines[-1] if lines else "bubblewrap said nothing"


def _watch(
    child: subprocess.Popen[bytes],
    streams: tuple[BinaryIO, BinaryIO],
    tree: Path,
    *,
    limits: Limits,
    started: float,
) -> KillReason | None:
    """Wait for the child; return why it had to be stopped, or None when it ended by itself."""
    sizes = (0, 0)
    last_activity = started
    while child.poll() is None:
        now = time.monotonic()
        current = (os.fstat(streams[0].fileno()).st_size, os.fstat(streams[1].fileno()).st_size)
        if current != sizes:
            sizes, last_activity = current, now
        if limits.wall_clock_s is not None and now - started >= limits.wall_clock_s:
            return KillReason.WALL_CLOCK
        if now - last_activity >= limits.inactivity_s:
            # Silent is not stalled if it is still writing files; the tree is only walked when
            # the output alone says "inactive", so a busy agent costs nothing.
            age = _age_of_newest_file(tree)
            if age is None or age >= limits.inactivity_s:
                return KillReason.INACTIVITY
            last_activity = now - age
        # Returns as soon as the child ends: a quick agent is not kept waiting for the poll.
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=limits.poll_s)
    return None


def _age_of_newest_file(tree: Path) -> float | None:
    """Seconds since the most recent modification of any file in `tree` (outside .git)."""
    newest: float | None = None
    stack = [tree]
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in _SKIPPED_FOLDERS:
                            stack.append(Path(entry.path))
                        continue
                    mtime = entry.stat(follow_symlinks=False).st_mtime
                except OSError:
                    continue  # vanished while we looked: the next look will tell
                newest = mtime if newest is None else max(newest, mtime)
    return None if newest is None else max(0.0, time.time() - newest)


def _stop_group(child: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the child's whole process group, then SIGKILL whatever is left after the grace."""
    group = child.pid  # start_new_session: the child leads a group of its own id
    if not _group_alive(group, child):
        return
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not _group_alive(group, child):
            return
        time.sleep(0.05)
    _signal_group(group, signal.SIGKILL)
    child.wait()


def _group_alive(group: int, child: subprocess.Popen[bytes]) -> bool:
    child.poll()  # reap the leader, so that its zombie does not count as a member
    members = _live_members_from_proc(group)
    if members is not None:
        return members
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _live_members_from_proc(group: int) -> bool | None:
    """Whether a process of `group` is still running, read from /proc; None without /proc.

    Zombies are not counted: an orphaned member that died is a zombie until init reaps it (some
    container inits never do), yet it still answers a signal probe.
    """
    proc_root = Path("/proc")
    if not (proc_root / "self" / "stat").exists():
        return None
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and fields[2] == str(group) and fields[0] not in {"Z", "X"}:
            return True
    return False


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signum)
