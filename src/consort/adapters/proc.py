"""The one way Consort runs a subprocess: argv lists, timeouts, and errors that carry everything."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from consort.core.errors import ConsortError

if TYPE_CHECKING:
    from consort.adapters.reaper import Reaper

# ---- the owner of the children: who started them, so that a crash's survivors are found -----

OWNER_VAR = "CONSORT_OWNER"
"""Set on every child Consort starts while a project's command owns its children:
`<state folder>|<pid>|<start time>` of the owning process. After a `kill -9` of that process,
its children (test and migrate processes, the deploy lane's app, agents) are found by this
variable and ended by the next `drive` or `consort branch gc`; the start time tells a reused
pid from the owner."""

_owner: str | None = None


@contextlib.contextmanager
def owning_children(state_dir: Path) -> Iterator[None]:
    """Mark every child started in the block as this process's, for `state_dir`'s project."""
    global _owner  # noqa: PLW0603 -- one owner per process, for every helper below
    previous = _owner
    _owner = _owner_marker(state_dir, os.getpid())
    try:
        yield
    finally:
        _owner = previous


@contextlib.contextmanager
def unowned() -> Iterator[None]:
    """Children started in the block are nobody's: a process meant to outlive its starter (the
    database server) must not be taken for a crash's survivor and ended by the next drive."""
    global _owner  # noqa: PLW0603 -- see owning_children
    previous = _owner
    _owner = None
    try:
        yield
    finally:
        _owner = previous


def _owner_marker(state_dir: Path, pid: int) -> str:
    return f"{state_dir.resolve()}|{pid}|{_start_time(pid)}"


def with_owner(env: Mapping[str, str]) -> dict[str, str]:
    """`env` plus the owner marker, when a command owns its children."""
    environment = dict(env)
    if _owner is not None:
        environment[OWNER_VAR] = _owner
    return environment


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class CommandFailed(ConsortError):
    """A subprocess exited non-zero (or timed out); carries the command, code and output."""

    def __init__(self, result: Completed, *, timed_out: bool = False):
        what = "timed out" if timed_out else f"exited {result.returncode}"
        detail = (result.stderr.strip() or result.stdout.strip()).splitlines()
        tail = detail[-1] if detail else ""
        super().__init__(f"`{' '.join(result.argv)}` {what}" + (f": {tail}" if tail else ""))
        self.result = result
        self.timed_out = timed_out


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    timeout: float | None = 120.0,
    check: bool = True,
) -> Completed:
    """Run argv to completion and capture its output.

    `env` replaces the environment entirely (for agent processes that must not inherit secrets);
    `extra_env` adds to the current one.
    """
    args = tuple(os.fspath(a) for a in argv)
    environment = with_owner(os.environ if env is None else env)
    if extra_env:
        environment.update(extra_env)
    try:
        proc = subprocess.run(
            args,
            cwd=cwd,
            env=environment,
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise ConsortError(f"cannot run `{args[0]}`: program not found") from exc
    except subprocess.TimeoutExpired as exc:
        result = Completed(args, -1, _text(exc.stdout), _text(exc.stderr))
        raise CommandFailed(result, timed_out=True) from exc
    result = Completed(args, proc.returncode, proc.stdout, proc.stderr)
    if check and not result.ok:
        raise CommandFailed(result)
    return result


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def run_binary(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    input_bytes: bytes = b"",
    timeout: float | None = 120.0,
) -> bytes:
    """Run argv to completion on bytes in and out (git's object streams); non-zero is an error."""
    args = tuple(os.fspath(a) for a in argv)
    try:
        proc = subprocess.run(
            args,
            cwd=cwd,
            env=with_owner(os.environ if env is None else env),
            input=input_bytes,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise ConsortError(f"cannot run `{args[0]}`: program not found") from exc
    except subprocess.TimeoutExpired as exc:
        result = Completed(args, -1, "", _text(exc.stderr))
        raise CommandFailed(result, timed_out=True) from exc
    if proc.returncode != 0:
        raise CommandFailed(Completed(args, proc.returncode, "", _text(proc.stderr)))
    return proc.stdout


# ---- a contained process: its own session, every process it starts ended with it -------------

_live_tokens: set[str] = set()
_live_lock = threading.Lock()


@contextlib.contextmanager
def _live(token: str) -> Iterator[None]:
    """`token` names a contained process of Consort's while the block runs."""
    with _live_lock:
        _live_tokens.add(token)
    try:
        yield
    finally:
        with _live_lock:
            _live_tokens.discard(token)


def live_run_markers() -> frozenset[bytes]:
    """`CONSORT_RUN_TOKEN=...` of every contained process of Consort's running now: each ends,
    with every process carrying its token, when its run ends (`adapters.reaper` spares them)."""
    with _live_lock:
        return frozenset(f"{SESSION_TOKEN_VAR}={token}".encode() for token in _live_tokens)


SESSION_TOKEN_VAR = "CONSORT_RUN_TOKEN"  # noqa: S105 -- a variable name
# The descriptor a run's secret input is read from (`run_contained(secret_input=...)`).
SECRET_INPUT_VAR = "RUN_INPUT_FD"  # noqa: S105 -- a variable name


@dataclass(frozen=True)
class Contained:
    argv: tuple[str, ...]
    returncode: int | None  # None: stopped at the timeout
    output: str  # stdout and stderr, interleaved
    side_channel: bytes  # what the process wrote to the extra pipe (its report)
    timed_out: bool
    leftovers: int  # processes of the run still alive when its main process ended (all ended)
    escaped: int  # of those, how many had left the run's session
    output_held: bool  # something still held the output open after the grace


class Stop:
    """A contained run another thread may end early (`run_contained(stop=...)`): `stop()`
    ends it as its timeout would, at once."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        self.stopped = False

    def fileno(self) -> int:
        """Readable once `stop()` was called: a run waits on it beside its process."""
        return self._read

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            os.write(self._write, b"x")

    def close(self) -> None:
        """Close its pipe, once: a second close of a number another thread has been given
        since would close that thread's descriptor."""
        for fd in (self._read, self._write):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._read = self._write = -1


def run_contained(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    timeout: float,
    grace: float = 2.0,
    side_channel: bool = False,
    secret_input: bytes | None = None,
    reap: bool = False,
    stop: Stop | None = None,
) -> Contained:
    """Run argv in a session of its own and end everything it started when it ends.

    The process is the leader of a new session; `env` gets a fresh token so that processes
    which left the session (a `setsid` daemon) are still found by their environment. When the
    main process exits (or `timeout` passes), the session's and the token's processes are
    killed; a process that still holds the output open does not extend the run past `grace`.
    With `side_channel`, the child gets the write end of a pipe, named `/dev/fd/N` wherever
    `{side_channel}` appears in argv, whose content is returned: a report written there cannot
    be rewritten after the fact, only appended to (which breaks it). With `secret_input`, the
    child gets the read end of a pipe holding those bytes and nothing more, its number in
    `SECRET_INPUT_VAR`: the first reader (Consort's own plugin, loaded before any code of the
    project's) takes them, and whoever looks later finds an empty, closed pipe.
    With `reap` (a run outside any sandbox, whose PID namespace would end them), the processes
    it started are also found by their ancestry (`adapters.reaper`): one that left the session
    and the token behind is ended too, and counted as escaped. With `stop`, another thread may
    end the run before its timeout (`Stop.stop`): it ends as a timed-out run.
    """
    import secrets

    from consort.adapters.reaper import Reaper

    token = secrets.token_hex(16)
    with _live(token), Reaper() if reap else contextlib.nullcontext() as reaper:
        return _run_contained(
            reaper,
            token,
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            grace=grace,
            side_channel=side_channel,
            secret_input=secret_input,
            stop=stop,
        )


def _run_contained(  # noqa: PLR0912 -- one process's whole life
    reaper: Reaper | None,
    token: str,
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    timeout: float,
    grace: float,
    side_channel: bool,
    secret_input: bytes | None,
    stop: Stop | None,
) -> Contained:
    import time

    environment = {**with_owner(env), SESSION_TOKEN_VAR: token}
    side_read, side_write = os.pipe() if side_channel else (-1, -1)
    pass_fds: tuple[int, ...] = (side_write,) if side_channel else ()
    secret_read = _secret_pipe(secret_input) if secret_input is not None else -1
    if secret_read >= 0:
        pass_fds += (secret_read,)
        environment[SECRET_INPUT_VAR] = str(secret_read)
    args = tuple(os.fspath(a).replace("{side_channel}", f"/dev/fd/{side_write}") for a in argv)
    try:
        child = subprocess.Popen(
            args,
            cwd=cwd,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except FileNotFoundError as exc:
        for fd in (side_read, side_write):
            if fd >= 0:
                os.close(fd)
        raise ConsortError(f"cannot run `{args[0]}`: program not found") from exc
    finally:
        for fd in (side_write, secret_read):
            if fd >= 0:
                os.close(fd)
    born = _start_ticks(child.pid)
    output = bytearray()
    report = bytearray()
    if child.stdout is None:
        raise ConsortError("the test process has no output pipe")
    readers = [threading.Thread(target=_drain, args=(child.stdout.fileno(), output), daemon=True)]
    if side_read >= 0:
        readers.append(threading.Thread(target=_drain, args=(side_read, report), daemon=True))
    for reader in readers:
        reader.start()
    timed_out = not _exits_within(child, timeout, stop)
    leftovers, escaped = _end_run(child.pid, token, born)
    if timed_out:
        child.wait()
    if reaper is not None:
        child.poll()
        hidden = reaper.end(spare=child.pid)
        leftovers += hidden
        escaped += hidden
    deadline = time.monotonic() + grace
    for reader in readers:
        reader.join(max(0.0, deadline - time.monotonic()))
    held = any(reader.is_alive() for reader in readers)
    if held:  # one more sweep: a process may have started between the first and now
        more, more_escaped = _end_run(child.pid, token, born)
        leftovers += more
        escaped += more_escaped
    child.stdout.close()
    if side_read >= 0 and not held:
        os.close(side_read)
    return Contained(
        argv=args,
        returncode=None if timed_out else child.returncode,
        output=bytes(output).decode("utf-8", errors="replace"),
        side_channel=bytes(report),
        timed_out=timed_out,
        leftovers=leftovers,
        escaped=escaped,
        output_held=held,
    )


def _exits_within(child: subprocess.Popen[bytes], timeout: float, stop: Stop | None = None) -> bool:
    """Wait until `child` exits (True, and it is reaped) or `timeout` passes or `stop` is
    called (False).

    `Popen.wait(timeout)` polls, sleeping up to 50 ms between looks: a run would end that much
    after its process did. A pidfd (Linux 5.3) becomes readable the moment the process exits."""
    import select

    try:
        fd = os.pidfd_open(child.pid)
    except (AttributeError, OSError):  # an older kernel, or reaped already
        return _polled_exit(child, timeout, stop)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if stop is not None:
            poller.register(stop.fileno(), select.POLLIN)
        ready = poller.poll(max(0, int(timeout * 1000)))
        if not ready or any(which != fd for which, _ in ready):
            return False
    finally:
        os.close(fd)
    child.wait()
    return True


def _polled_exit(child: subprocess.Popen[bytes], timeout: float, stop: Stop | None) -> bool:
    """`_exits_within` without a pidfd: Popen's polling, in short waits where a `stop` may
    come."""
    import time

    deadline = time.monotonic() + timeout
    while stop is None or not stop.stopped:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            child.wait(timeout=left if stop is None else min(left, 0.05))
        except subprocess.TimeoutExpired:
            continue
        return True
    return False


def _secret_pipe(data: bytes) -> int:
    """The read end of a pipe that holds `data` and whose write end is closed."""
    read, write = os.pipe()
    try:
        os.write(write, data)  # a few bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read


def _drain(fd: int, into: bytearray) -> None:
    try:
        while chunk := os.read(fd, 65536):
            into.extend(chunk)
    except OSError:
        return


def _end_run(session: int, token: str, born: int | None = None) -> tuple[int, int]:
    """Kill the session's processes and every process carrying the run's token.

    `born`: when the run's first process started (`_start_ticks`); a process started before
    it cannot carry the token, made for this run, and its environment is not read (a machine
    runs hundreds of processes: reading each one's is most of this sweep).

    Returns (how many were alive, how many of those had left the session)."""
    import signal

    marker = f"{SESSION_TOKEN_VAR}={token}".encode()
    alive = 0
    escaped = 0
    killed: list[int] = []
    me = os.getpid()
    ours = pid_namespace(me)
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (me, session):
            continue
        pid = int(entry)
        fields = _live_stat(pid)
        if fields is None:
            continue
        in_session = int(fields[3]) == session
        older = born is not None and int(fields[19]) < born
        carries = in_session or (not older and _carries(pid, marker))
        if not carries:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        killed.append(pid)
        alive += 1
        # A process of a PID namespace below ours (a sandbox's: its init, bubblewrap, carries
        # the token) has left no namespace: the kernel ends it with the namespace, and it may
        # still be on its way out when bubblewrap outside has already exited.
        escaped += 0 if in_session or _nested(pid, ours) else 1
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(session, signal.SIGKILL)
    _await_death(killed)
    return alive, escaped


def pid_namespace(pid: int) -> str | None:
    """The PID namespace process `pid` is in (`pid:[inode]`), or None when it cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _nested(pid: int, ours: str | None) -> bool:
    """Whether `pid` is in a PID namespace other than `ours` (one of its descendants: a process
    sees only those), so that it ends with that namespace's init."""
    theirs = pid_namespace(pid)
    return ours is not None and theirs is not None and theirs != ours


def _await_death(pids: list[int], limit: float = 10.0) -> None:
    """SIGKILL is delivered asynchronously: wait (boundedly) until each is dead or a zombie."""
    import time

    deadline = time.monotonic() + limit
    for pid in pids:
        while _session_of(pid) is not None and time.monotonic() < deadline:
            time.sleep(0.01)


def _live_stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None when the
    process is gone or a zombie (already dead; its parent reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return None if fields[0] == b"Z" else fields


def is_alive(pid: int) -> bool:
    """Whether process `pid` runs: a zombie (dead, waiting for a parent to reap it, which on a
    machine whose init never reaps may be forever) does not."""
    return _live_stat(pid) is not None


def exists(pid: int) -> bool:
    """Whether `pid` names any process at all, a zombie included (what `kill -0` answers)."""
    return Path(f"/proc/{pid}").exists()


def command_name(pid: int) -> str | None:
    """The process's command name (/proc/PID/comm), or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def processes_named(name: str, *, inside: Path) -> list[int]:
    """Live processes called `name` whose working folder is `inside` or below it."""
    base = inside.resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or command_name(int(entry.name)) != name:
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if cwd.is_relative_to(base) and is_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot; None when it is gone."""
    fields = _live_stat(pid)
    return None if fields is None else int(fields[19])


def _session_of(pid: int) -> int | None:
    fields = _live_stat(pid)
    return None if fields is None else int(fields[3])


def _carries(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return marker in handle.read().split(b"\0")
    except OSError:
        return False


def started_at(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), or None when it is not running."""
    ticks = _start_time(pid)
    if ticks is None:
        return None
    # The boot time from the clocks, not /proc/stat's `btime`: that is cut to whole seconds,
    # which put every start up to a second early (a start time counts from boot in ticks).
    boot = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return boot + int(ticks) / os.sysconf("SC_CLK_TCK")


def _start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), or None when it is not running."""
    fields = _live_stat(pid)
    return None if fields is None else fields[19].decode()


# ---- a background process: the deploy lane's app, stopped with everything it started --------


class Background:
    """A long-lived child in a session of its own, with its output in a file; `stop` ends it
    and every process it started (its session, and the ones carrying its token)."""

    def __init__(self, child: subprocess.Popen[bytes], token: str):
        self._child = child
        self._token = token

    @property
    def pid(self) -> int:
        return self._child.pid

    def poll(self) -> int | None:
        """Its exit status, or None while it runs."""
        return self._child.poll()

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to its session, SIGKILL to whatever is left after `grace` seconds."""
        import signal

        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._child.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._child.wait(timeout=grace)
        _end_run(self._child.pid, self._token)
        self._child.wait()


@contextlib.contextmanager
def background(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    output: Path,
    grace: float = 10.0,
    reap: bool = False,
) -> Iterator[Background]:
    """Start argv in a session of its own, stdout and stderr to `output`; stopped when the
    block ends, however it ends. With `reap` (outside any sandbox), what it started is also
    found by its ancestry when it stops, as `run_contained` does."""
    import secrets

    from consort.adapters.reaper import Reaper

    token = secrets.token_hex(16)
    args = tuple(os.fspath(a) for a in argv)
    with contextlib.ExitStack() as stack:
        if reap:
            stack.enter_context(Reaper())  # entered first: it ends last, after `stop`
        with output.open("wb") as sink:
            try:
                child = subprocess.Popen(
                    args,
                    cwd=cwd,
                    env={**with_owner(env), SESSION_TOKEN_VAR: token},
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except FileNotFoundError as exc:
                raise ConsortError(f"cannot run `{args[0]}`: program not found") from exc
        running = Background(child, token)
        try:
            with _live(token):
                yield running
        finally:
            running.stop(grace)


# ---- what a crash left running ---------------------------------------------------------------


@dataclass(frozen=True)
class Orphan:
    """A process a killed Consort command started, still running after its owner died."""

    pid: int
    command: str
    owner_pid: int

    def describe(self) -> str:
        return f"process {self.pid} ({self.command}), left by Consort process {self.owner_pid}"


def orphans_of(state_dir: Path) -> list[Orphan]:
    """The running processes started for `state_dir`'s project by a Consort process that is no
    longer running (killed: its own cleanup never ran)."""
    prefix = f"{OWNER_VAR}={state_dir.resolve()}|".encode()
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        marker = _owner_in(pid, prefix)
        if marker is None:
            continue
        owner, _, started = marker.decode(errors="replace").partition("|")
        if not owner.isdigit():
            continue
        owner_pid = int(owner)
        if _start_time(owner_pid) == started:
            continue  # its owner still runs, and stops it itself
        if _session_of(pid) is None:
            continue  # already dead, waiting to be reaped
        found.append(Orphan(pid, _command_of(pid), owner_pid))
    return found


def end_orphans(state_dir: Path) -> list[Orphan]:
    """SIGKILL every orphan of `state_dir`'s project (and the session each one leads)."""
    import signal

    ended = []
    for orphan in orphans_of(state_dir):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if _session_of(orphan.pid) == orphan.pid:
                os.killpg(orphan.pid, signal.SIGKILL)
            os.kill(orphan.pid, signal.SIGKILL)
            ended.append(orphan)
    _await_death([o.pid for o in ended])
    return ended


def _owner_in(pid: int, prefix: bytes) -> bytes | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            variables = handle.read().split(b"\0")
    except OSError:
        return None
    for variable in variables:
        if variable.startswith(prefix):
            return variable[len(prefix) :]
    return None


def _command_of(pid: int, limit: int = 80) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            text = handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def process_tag(pid: int | None = None) -> str:
    """`<pid>.<start time>` of a process (this one by default): names a thing it owns (a
    folder, say) so that it can be told apart from a later process with the same pid."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_time(pid)}"


def tag_alive(tag: str) -> bool:
    """Whether the process a `process_tag` names is still running."""
    pid, _, started = tag.partition(".")
    return pid.isdigit() and _start_time(int(pid)) == started
