"""What a `kill -9` leaves behind is found and removed by the next `drive` (or `branch gc`).

A real Consort process (the `HOLDER` below, using Consort's own helpers as `drive` does) makes
the things a crash can strand: a throwaway child database with its role, a parent database
blocked for a copy, the export of a run, a test process in a session of its own with a child of
its own; and a real `git worktree add` is killed in the middle of its checkout. Each is SIGKILLed
for real, then the next command must remove every remain and say what it removed — and must
leave alone what a process still running owns.

The Consort processes of these tests have a temporary folder of their own (TMPDIR): any Consort
command on the machine removes the exports of dead Consort processes from its own temporary
folder, and one run elsewhere at the same time (another test, another project) must not remove
the export a test stranded before the test's own command does, nor the test leave its remains in
the machine's /tmp.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.helpers import consort, git, ok

pytestmark = pytest.mark.integration

HOLDER = r"""
import json, sys, time
from pathlib import Path
from consort.adapters import proc
from consort.adapters.paired import PairedBranches
from consort.adapters.tdd.export import exported
from consort.core.project import find_project

project = find_project(Path.cwd())
paired = PairedBranches(project)
with proc.owning_children(project.state_dir):
    with paired.dbs.ephemeral("main") as child, exported(project.root, "HEAD") as export:
        # the state a kill in the middle of a copy of `blocked` leaves: it refuses connections
        with paired.backend.admin() as conn:
            conn.execute("ALTER DATABASE blocked ALLOW_CONNECTIONS false")
        sleeper = [sys.executable, "-c", "import subprocess, sys, time;"
                   "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']);"
                   "time.sleep(600)"]
        with proc.background(sleeper, cwd=export.root, env={"PATH": "/usr/bin:/bin"},
                             output=export.root.parent / (export.root.name + ".log")) as run:
            print(json.dumps({"database": child.database, "role": child.role,
                              "export": str(export.root), "process": run.pid}), flush=True)
            time.sleep(600)
"""


@dataclass(frozen=True)
class Stranded:
    database: str
    role: str
    export: Path
    process: int  # leads a session with a child of its own


def _admin(project: Path) -> psycopg.Connection:
    return psycopg.connect(ok(consort("db", "url", "main", cwd=project)).strip(), autocommit=True)


def _catalog(project: Path, sql: str, name: str) -> bool:
    """Whether the catalog has a row `sql` finds for `name` (asked as main's own user)."""
    with _admin(project) as conn:
        return conn.execute(sql, (name,)).fetchone() is not None


def _database_exists(project: Path, name: str) -> bool:
    return _catalog(project, "SELECT 1 FROM pg_database WHERE datname = %s", name)


def _role_exists(project: Path, name: str) -> bool:
    return _catalog(project, "SELECT 1 FROM pg_roles WHERE rolname = %s", name)


def _accepts_connections(project: Path, name: str) -> bool:
    return _catalog(project, "SELECT 1 FROM pg_database WHERE datname = %s AND datallowconn", name)


def _session_members(session: int) -> list[int]:
    """Live processes of a session (a killed process is gone or a zombie)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] not in "ZX" and int(fields[3]) == session:
            found.append(int(entry.name))
    return found


def own_tmp(project: Path) -> dict[str, str]:
    """The environment that gives the Consort processes working on `project` a temporary folder
    of their own, beside the project in the test's folder (removed with it)."""
    folder = project.parent / "tmp"
    folder.mkdir(exist_ok=True)
    return {"TMPDIR": str(folder)}


def _start_holder(project: Path) -> tuple[subprocess.Popen[str], Stranded]:
    import json

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200", **own_tmp(project)},
    )
    assert holder.stdout is not None
    line = holder.stdout.readline()
    if not line:
        holder.wait(timeout=60)
        pytest.fail(f"the holder did not start: {holder.stderr.read() if holder.stderr else ''}")
    made = json.loads(line)
    stranded = Stranded(made["database"], made["role"], Path(made["export"]), made["process"])
    deadline = time.monotonic() + 60
    while len(_session_members(stranded.process)) < 2:  # the test process and its child
        assert time.monotonic() < deadline, "the test process did not start its child"
        time.sleep(0.05)
    return holder, stranded


@pytest.fixture
def crashed(fresh_project: Path) -> Iterator[tuple[Path, Stranded]]:
    """A project where a Consort process was SIGKILLed while it held everything above."""
    ok(consort("branch", "create", "blocked", cwd=fresh_project))
    git(fresh_project, "checkout", "-q", "main")
    holder, stranded = _start_holder(fresh_project)
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=60)
    assert holder.returncode == -signal.SIGKILL
    try:
        yield fresh_project, stranded
    finally:
        for pid in _session_members(stranded.process):
            os.kill(pid, signal.SIGKILL)


def _everything_was_left(project: Path, stranded: Stranded) -> None:
    assert _database_exists(project, stranded.database)
    assert _role_exists(project, stranded.role)
    assert not _accepts_connections(project, "blocked")
    assert stranded.export.is_dir()
    assert len(_session_members(stranded.process)) == 2


def _nothing_is_left(project: Path, stranded: Stranded, said: str) -> None:
    assert not _database_exists(project, stranded.database)
    assert not _role_exists(project, stranded.role)
    assert _accepts_connections(project, "blocked")
    assert not stranded.export.exists()
    assert _session_members(stranded.process) == []
    assert f"dropped {stranded.database}" in said
    assert "reopened blocked" in said
    assert f"removed {stranded.export}" in said
    assert f"stopped process {stranded.process}" in said


def test_the_next_drive_removes_what_a_kill_9_left_and_says_so(crashed):
    project, stranded = crashed
    _everything_was_left(project, stranded)
    out = ok(consort("drive", cwd=project, env=own_tmp(project)))
    _nothing_is_left(project, stranded, out)
    assert "after a crash:" in out
    again = ok(consort("drive", cwd=project, env=own_tmp(project)))
    assert "after a crash" not in again  # nothing left to say the second time
    ok(consort("branch", "switch", "blocked", cwd=project))  # the blocked parent is usable again


def test_branch_gc_removes_the_same(crashed):
    project, stranded = crashed
    _everything_was_left(project, stranded)
    out = ok(consort("branch", "gc", cwd=project, env=own_tmp(project)))
    _nothing_is_left(project, stranded, out)
    assert "nothing to collect" in ok(consort("branch", "gc", cwd=project, env=own_tmp(project)))


def test_what_a_running_process_owns_is_left_alone(fresh_project):
    """The cheat a sweep invites: killing the live runs of someone else. A Consort process that
    still runs owns its child database, export and test process; `branch gc` keeps them."""
    project = fresh_project
    ok(consort("branch", "create", "blocked", cwd=project))
    git(project, "checkout", "-q", "main")
    holder, stranded = _start_holder(project)
    try:
        out = ok(consort("branch", "gc", cwd=project, env=own_tmp(project)))
        assert stranded.database not in out and str(stranded.process) not in out
        assert _database_exists(project, stranded.database)
        assert stranded.export.is_dir()
        assert len(_session_members(stranded.process)) == 2
    finally:
        holder.send_signal(signal.SIGTERM)  # ends its blocks: it removes what it made
        holder.communicate(timeout=60)
        for pid in _session_members(stranded.process):
            os.kill(pid, signal.SIGKILL)


def test_a_worktree_add_killed_mid_checkout_is_removed_by_the_next_drive(fresh_project):
    """`git worktree add` SIGKILLed while it checks out (a smudge filter holds it there) leaves
    a half-made worktree git still marks as being made; the next drive removes it."""
    project = fresh_project
    (project / "slow.bin").write_text("content\n")
    (project / ".gitattributes").write_text("slow.bin filter=slow\n")
    git(project, "add", "slow.bin", ".gitattributes")
    git(project, "-c", "user.name=T", "-c", "user.email=t@localhost", "commit", "-qm", "slow")
    git(project, "branch", "half")
    target = project / ".consort" / "worktrees" / "F9-x" / "S1-y"
    target.parent.mkdir(parents=True)
    started = project / "smudge-started"
    smudge = f"touch {started}; sleep 600"
    adding = subprocess.Popen(
        ["git", "-c", f"filter.slow.smudge={smudge}", "worktree", "add", str(target), "half"],
        cwd=project,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline, "git never reached the checkout"
        time.sleep(0.05)
    os.killpg(adding.pid, signal.SIGKILL)
    adding.wait(timeout=60)
    started.unlink()
    assert (target / ".git").is_file()
    assert str(target) in git(project, "worktree", "list")

    # Checkouts with a lifecycle of their own (a spike's, an experiment's) are not the drive's:
    # a folder there, or a lock in one of them, is left as it is.
    own = project / ".consort" / "worktrees" / "_experiments" / "F9-x-S1-T1-1" / "fast"
    own.mkdir(parents=True)
    (own / "work.py").write_text("x = 1\n")
    spike = project / ".consort" / "worktrees" / "_spikes" / "probe"
    git(project, "worktree", "add", "-q", "-b", "spike/probe", str(spike), "main")
    spike_lock = Path(git(spike, "rev-parse", "--path-format=absolute", "--git-dir")) / "index.lock"
    spike_lock.write_text("")

    out = ok(consort("drive", cwd=project))
    assert f"removed a half-made worktree: {target}" in out
    assert not target.exists()
    assert (own / "work.py").is_file() and spike_lock.is_file()
    assert "_experiments" not in out and "_spikes" not in out
    assert str(target) not in git(project, "worktree", "list")
    git(project, "worktree", "add", "-q", str(target), "half")  # the path is free again


SLEEPS = """\
import os
import time
from pathlib import Path


def test_sleeps():
    Path({marker!r}).write_text(str(os.getpid()))
    time.sleep(600)
"""


def test_a_test_process_left_by_a_killed_consort_test_is_stopped_by_branch_gc(
    fresh_project, tmp_path
):
    """`consort test` SIGKILLed while its suite runs (unsandboxed: no PID namespace ends it):
    the test process, in a session of its own, lives on; `branch gc` finds it by its owner."""
    root = fresh_project
    config = (root / "consort.toml").read_text()
    config = config.replace('command = ["alembic", "upgrade", "head"]', "command = []")
    config = config.replace(
        'command = ["python", "-m", "pytest"]', f'command = ["{sys.executable}", "-m", "pytest"]'
    )
    config = config.replace('sandbox = "auto"', 'sandbox = "off"')
    (root / "consort.toml").write_text(config)
    marker = tmp_path / "test-process-pid"
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_sleeps.py").write_text(SLEEPS.format(marker=str(marker)))
    git(root, "add", "-A")
    git(root, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qm", "a slow test")

    run = subprocess.Popen(
        [sys.executable, "-m", "consort", "test"],
        cwd=root,
        env={**os.environ, **own_tmp(root)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not marker.exists() or not marker.read_text():
        assert run.poll() is None, "consort test ended before its test started"
        assert time.monotonic() < deadline, "the test never started"
        time.sleep(0.05)
    test_pid = int(marker.read_text())
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=60)
    try:
        time.sleep(0.5)
        assert _session_members(os.getsid(test_pid)), "the test process did not outlive its run"
        out = ok(consort("branch", "gc", cwd=root, env=own_tmp(root)))
        session = [line for line in out.splitlines() if "stopped process" in line]
        assert session, out
        deadline = time.monotonic() + 30
        while Path(f"/proc/{test_pid}").exists() and _alive(test_pid):
            assert time.monotonic() < deadline, f"{test_pid} still runs after branch gc"
            time.sleep(0.05)
    finally:
        if _alive(test_pid):
            os.kill(test_pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"
