"""Where a benchmark's time goes: wall time per kind of work, measured inside one process.

`Timings.install()` wraps the functions that do each kind of work (a sandboxed test process, a
migrate process, a throwaway child's creation, a git command, an agent turn...) with timers.
Each timer counts its own time only: a call timed inside another timed call is taken out of the
outer one's figure, so the rows add up to the time covered, and the rest is Consort's own Python
between them. Only the main thread is timed (the throwaway children's drops run on a thread of
their own, off the runs' path). Beside the wall time: this process's CPU time, and the database
server's (its postmaster's and its exited backends'), read from /proc before and after. The
sandboxed processes' CPU time cannot be read this way: bubblewrap leaves the sandbox's init to
be reaped by someone else, so it never reaches this process's `RUSAGE_CHILDREN`.

Nothing here changes what runs: the wrappers call the original functions with the same
arguments and return what they return.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def server_cpu(pid: int) -> float:
    """CPU seconds of process `pid` and of its children it reaped (PostgreSQL's backends)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rfind(")") + 2 :].split()
    # utime stime cutime cstime are fields 14-17 (1-based); after the command name, 12-15
    ticks = sum(int(v) for v in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclass
class _Frame:
    category: str
    nested: float = 0.0  # wall time of the timed calls inside this one


@dataclass
class Row:
    wall: float = 0.0
    calls: int = 0


@dataclass
class Timings:
    rows: dict[str, Row] = field(default_factory=lambda: defaultdict(Row))
    _stack: list[_Frame] = field(default_factory=list)
    _undo: list[Callable[[], None]] = field(default_factory=list)

    @contextlib.contextmanager
    def timing(self, category: str) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        frame = _Frame(category)
        self._stack.append(frame)
        started = time.monotonic()
        try:
            yield
        finally:
            wall = time.monotonic() - started
            self._stack.pop()
            row = self.rows[category]
            row.wall += wall - frame.nested
            row.calls += 1
            if self._stack:
                self._stack[-1].nested += wall

    def wrap(self, owner: Any, name: str, category: str | Callable[..., str]) -> None:
        """Time every call of `owner.name` (a module's function or a class's method); a name
        this version of Consort does not have is left alone (its time stays in the rest)."""
        if name not in vars(owner):
            return
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        inner = original.__func__ if isinstance(original, staticmethod) else original

        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            label = category(*args, **kwargs) if callable(category) else category
            with self.timing(label):
                return inner(*args, **kwargs)

        setattr(owner, name, staticmethod(timed) if isinstance(original, staticmethod) else timed)
        self._undo.append(lambda: setattr(owner, name, original))

    def wrap_context(self, owner: Any, name: str, entering: str, leaving: str) -> None:
        """Time the entry and the exit of the context manager `owner.name(...)` returns, each
        on its own (the block between is its caller's)."""
        if name not in vars(owner):
            return
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)

        @functools.wraps(original)
        @contextlib.contextmanager
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            manager = original(*args, **kwargs)
            with self.timing(entering):
                value = manager.__enter__()
            try:
                yield value
            except BaseException as exc:
                with self.timing(leaving):
                    if not manager.__exit__(type(exc), exc, exc.__traceback__):
                        raise
            else:
                with self.timing(leaving):
                    manager.__exit__(None, None, None)

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original))

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()


def _process_kind(argv: Any, *_args: Any, **_kwargs: Any) -> str:
    words = [str(a) for a in argv]
    for word, kind in (("pytest", "test"), ("alembic", "migrate")):
        if word in words:
            return f"sandboxed {kind} process (bwrap + bridge + {word})"
    return "sandboxed other process"


def _held_kind(process: Any, *_args: Any, **_kwargs: Any) -> str:
    if _process_kind(process.boxed.argv).startswith("sandboxed test"):
        return "sandboxed test process, after its migrations (bwrap + pytest)"
    return "sandboxed migrate process, after the child's copy (bwrap + bridge + alembic)"


def _subprocess_kind(argv: Any, *_args: Any, **_kwargs: Any) -> str:
    program = os.path.basename(str(next(iter(argv), "")))
    return "git commands" if program == "git" else f"other subprocesses ({program})"


def install() -> Timings:
    """Timers on the kinds of work a drive does (see the module's docstring)."""
    from consort.adapters import paired, proc, smells
    from consort.adapters.db import branching, liveness, schema_diff
    from consort.adapters.tdd import runbox, runner
    from consort.core.ledger import store
    from consort.lanes import design, loop, release
    from consort.lanes.build import branches, turns

    timings = Timings()
    wrap, context = timings.wrap, timings.wrap_context
    # processes
    wrap(runner, "run_boxed", _process_kind)
    # newer versions start a run's test process (and later its migrate process too) on a
    # thread of its own, before its turn: what the run waits for it at its turn is the main
    # thread's
    held = getattr(runner, "HeldProcess", None) or getattr(runner, "SuiteProcess", None)
    if held is not None:
        wrap(held, "result", _held_kind)
    wrap(proc, "run", _subprocess_kind)
    wrap(proc, "run_binary", _subprocess_kind)
    context(proc, "background", "deploy: app start (sandboxed)", "deploy: app stop")
    wrap(release, "_wait_until_up", "deploy: wait for the app, smoke GETs")
    # databases
    context(
        branching.BranchDatabases,
        "ephemeral",
        "throwaway child: create",
        "throwaway child: retire (drop handed off)",
    )
    wrap(paired.PairedBranches, "create", "branch create (git + database)")
    for module in (branches, release):
        wrap(module, "migrate", "branch migrate (merge, promote)")
    wrap(branching.BranchDatabases, "set_migrated", "branch migration record")
    wrap(runner, "server_identity", "server liveness checks")
    wrap(runner, "server_loss", "server liveness checks")
    watch = getattr(liveness, "ServerWatch", None)  # newer versions: one connection per run
    for name in ("__enter__", "loss", "__exit__") if watch is not None else ():
        wrap(watch, name, "server liveness checks")
    wrap(runner, "sessions_of", "session counts (pg_stat_database)")
    for name in ("_applies_nothing", "_database_state", "_migration_violations"):
        wrap(runner.SealedRun, name, "migration reads (catalog, rows)")
    wrap(runner, "_record_migrated", "branch migration record")
    # a run's other parts
    context(runner, "exported", "export: write the commit's files", "export: remove")
    context(runbox.RunSandbox, "boxed", "sandbox: arguments + gate open", "sandbox: gate close")
    wrap(runner, "candidate_violations", "seal rules (candidate)")
    wrap(runner, "installed_among", "seal rules (installed modules)")
    wrap(runner, "frozen_files", "seal rules (frozen files)")
    wrap(runner, "migration_inputs", "migration digest")
    wrap(runner.SealedRun, "_read_report", "report parse + canaries")
    wrap(schema_diff, "read_schema", "schema check (read the migrated schema)")
    for module in (branches, release):
        wrap(module, "merge_violations", "seal rules (merge)")
    # turns, ledger, state
    for module in (design, turns):
        wrap(module, "run_turn", "agent turns (guards, replay, record)")
    wrap(store.Ledger, "read", "ledger read")
    wrap(store.Ledger, "record", "ledger append")
    wrap(loop, "derive", "state derivation")
    wrap(smells, "find_smells", "review: static checks")
    return timings


def table(timings: Timings, total: float, server: float) -> list[str]:
    """The rows by wall time, with the rest of `total` as Consort's own Python."""
    rows = sorted(timings.rows.items(), key=lambda item: -item[1].wall)
    covered = sum(row.wall for _, row in rows)
    width = max([len(name) for name, _ in rows] + [40])
    lines = [f"{'where the time goes':<{width}}  {'wall s':>7}  {'share':>5}  {'calls':>5}"]
    for name, row in rows:
        lines.append(f"{name:<{width}}  {row.wall:7.1f}  {row.wall / total:5.0%}  {row.calls:5d}")
    rest = total - covered
    lines.append(
        f"{'the rest (Consort Python between them)':<{width}}  {rest:7.1f}  {rest / total:5.0%}"
    )
    lines.append(f"{'total':<{width}}  {total:7.1f}")
    own = resource.getrusage(resource.RUSAGE_SELF)
    lines.append(
        f"CPU: this process {own.ru_utime + own.ru_stime:.1f} s, the database server {server:.1f} s"
    )
    return lines
