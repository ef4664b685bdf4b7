"""One private PostgreSQL cluster per project, driven by our own thin initdb/pg_ctl code.

`initdb` costs seconds, so one pristine initialised cluster is kept per machine and PostgreSQL
version, and each project's cluster starts as a copy of it (a reflink copy where the filesystem
has them). The server listens on 127.0.0.1 only, on a port chosen once per project so that URLs
in `.env` stay valid across restarts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from consort.adapters import proc
from consort.adapters.db.account import ServerAccount
from consort.adapters.db.binaries import PgBinaries
from consort.core.errors import ConsortError, UsageError
from consort.core.fsutil import file_lock

DATA_DIR = "data"  # inside a cluster's home
SUPERUSER = "consort_admin"
CONF_INCLUDE = "consort.conf"
START_TIMEOUT_S = 60
CLONE_SINCE = 18  # the first PostgreSQL with file_copy_method
DEAD_SERVER_WAIT_S = 60.0  # how long a killed server's backends may take to notice and exit
# A postmaster writes postmaster.pid (with the time) soon after it starts: its process started
# at most this long before that time, and no later than it (give or take the clock's rounding).
LOCK_WRITTEN_WITHIN_S = 120
CLOCK_SLACK_S = 2


class CopyMethod(StrEnum):
    CLONE = "clone"  # reflinks: database copies are O(1) in size
    COPY = "copy"


@dataclass(frozen=True)
class ServerState:
    running: bool
    pid: int | None
    port: int | None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As PostgreSQL itself does: connections lingering in TIME_WAIT do not make a port busy.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def supports_reflink(folder: Path) -> bool:
    """True when `cp --reflink=always` works inside `folder` (XFS, btrfs, ...)."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".reflink-") as tmp:
        source = Path(tmp) / "a"
        source.write_bytes(b"consort")
        result = proc.run(["cp", "--reflink=always", source, Path(tmp) / "b"], check=False)
        return result.ok


def copy_tree(source: Path, target: Path) -> None:
    """Copy a folder keeping owners and modes, by reflink where the filesystem allows."""
    proc.run(["cp", "-a", "--reflink=auto", source, target], timeout=600)


@dataclass
class LocalCluster:
    """A project's cluster: its folder (data/ and server.log), the binaries and the OS account."""

    home: Path
    port: int
    binaries: PgBinaries
    account: ServerAccount
    setting: str = ""  # `[db] binaries` as configured now, for messages
    made_with: str | None = None  # `[db] binaries` when the cluster was made (None: not recorded)

    @property
    def data_dir(self) -> Path:
        return self.home / DATA_DIR

    @property
    def log_file(self) -> Path:
        return self.home / "server.log"

    def exists(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    # ---- creation -------------------------------------------------------------------------

    def create(self, superuser_password: str) -> CopyMethod:
        """Make the cluster as a copy of the machine's pristine cluster; set its own password."""
        if self.exists():
            raise UsageError(f"a database cluster already exists in {self.data_dir}")
        pristine = ensure_pristine(self.binaries, self.account)
        self.home.mkdir(parents=True, exist_ok=True)
        os.chmod(self.home, 0o700)
        self.account.chown(self.home)
        staging = self.home / "data.partial"
        shutil.rmtree(staging, ignore_errors=True)
        copy_tree(pristine, staging)
        method = self._method()
        self._write_settings(staging, method)
        self._single_user(
            staging,
            f"ALTER ROLE {SUPERUSER} PASSWORD '{superuser_password}'",
            # Branch roles may open their own database only, not the maintenance ones.
            "REVOKE CONNECT, TEMP ON DATABASE postgres FROM PUBLIC",
            "REVOKE CONNECT, TEMP ON DATABASE template1 FROM PUBLIC",
        )
        os.replace(staging, self.data_dir)
        return method

    def data_major(self) -> int | None:
        """The PostgreSQL major version the data folder was made by (its PG_VERSION file)."""
        try:
            return int((self.data_dir / "PG_VERSION").read_text(encoding="utf-8").split(".")[0])
        except (OSError, ValueError):
            return None

    def require_compatible(self) -> None:
        """Refuse, before anything touches the data folder, binaries of another major version
        than the one that made it: `[db] binaries` changed after the cluster was made."""
        made = self.data_major()
        if made is None:
            return
        major = self.binaries.major()
        if made == major:
            return
        before = f' (made with [db] binaries = "{self.made_with}")' if self.made_with else ""
        back = (
            f'set [db] binaries = "{self.made_with}" in consort.toml again'
            if self.made_with
            else f"set [db] binaries in consort.toml back to binaries of PostgreSQL {made}"
        )
        raise UsageError(
            f"the database cluster in {self.home} is PostgreSQL {made}{before}; [db] binaries = "
            f'"{self.setting or "embedded"}" gives PostgreSQL {major} ({self.binaries.bindir}), '
            "which cannot run it. Nothing was changed",
            fix=f"{back}; or, to move to PostgreSQL {major}, delete every database of the "
            "project with `consort db destroy --yes` and run `consort init` to make a new "
            "cluster (the current branch's database is made again, empty)",
        )

    def configure(self, *, port: int | None = None) -> CopyMethod:
        """Rewrite the settings file (port, copy method) of an existing cluster."""
        self.require_compatible()
        if port is not None:
            self.port = port
        method = self._method()
        self._write_settings(self.data_dir, method)
        return method

    def _method(self) -> CopyMethod:
        # file_copy_method (reflink clones) arrived in PostgreSQL 18; older servers copy.
        if self.binaries.major() < CLONE_SINCE:
            return CopyMethod.COPY
        return CopyMethod.CLONE if supports_reflink(self.home) else CopyMethod.COPY

    def copy_method(self) -> CopyMethod:
        with contextlib.suppress(FileNotFoundError):
            text = (self.data_dir / CONF_INCLUDE).read_text(encoding="utf-8")
            if "file_copy_method = 'clone'" in text:
                return CopyMethod.CLONE
        return CopyMethod.COPY

    def _write_settings(self, data_dir: Path, method: CopyMethod) -> None:
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": "''",
            "password_encryption": "'scram-sha-256'",
            "max_connections": "200",
            "logging_collector": "off",
        }
        if self.binaries.major() >= CLONE_SINCE:
            settings["file_copy_method"] = f"'{method.value}'"
        text = "# Written by Consort on every `consort db start --port`.\n" + "".join(
            f"{key} = {value}\n" for key, value in settings.items()
        )
        path = data_dir / CONF_INCLUDE
        path.write_text(text, encoding="utf-8")
        os.chmod(path, 0o600)
        self.account.chown(path)

    def _single_user(self, data_dir: Path, *statements: str) -> None:
        """Run SQL in single-user mode: before the first start, with no network exposure."""
        sql = "".join(f"{statement};\n\n" for statement in statements)
        argv = [
            str(self.binaries.tool("postgres")),
            "--single",
            "-D",
            str(data_dir),
            "-j",
            "postgres",
        ]
        proc.run(self.account.command(argv), input_text=sql, timeout=120)

    # ---- running --------------------------------------------------------------------------

    def state(self) -> ServerState:
        return server_state(self.home)

    def start(self) -> bool:
        """Start the server; False when it already ran (a second start is a no-op)."""
        if not self.exists():
            raise UsageError(f"no database cluster in {self.data_dir}", fix="run `consort init`")
        if self.state().running:
            return False
        self.require_compatible()
        clear_dead_lock(self.home)
        if not port_is_free(self.port):
            raise UsageError(
                f"port {self.port} on 127.0.0.1 is taken by another program",
                fix="stop that program, or run `consort db start --port 0` to move to a free port",
            )
        self.account.chown(self.home)
        argv = [
            str(self.binaries.tool("pg_ctl")),
            "start",
            "-D",
            str(self.data_dir),
            "-l",
            str(self.log_file),
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "-s",
        ]
        with proc.unowned():  # the server outlives the command that started it
            result = proc.run(self.account.command(argv), check=False, timeout=START_TIMEOUT_S + 10)
        if not result.ok or not self.state().running:
            raise UsageError(
                f"the database server did not start: {self._failure_reason(result)}",
                fix=f"see {self.log_file}; if the data folder {self.data_dir} is damaged, move it "
                "aside and run `consort init` again",
            )
        return True

    def stop(self) -> bool:
        """Stop the server cleanly; False when it was not running."""
        if not self.state().running:
            return False
        argv = [
            str(self.binaries.tool("pg_ctl")),
            "stop",
            "-D",
            str(self.data_dir),
            "-m",
            "fast",
            "-w",
            "-s",
        ]
        proc.run(self.account.command(argv), timeout=120)
        return True

    def _failure_reason(self, result: proc.Completed) -> str:
        lines = []
        with contextlib.suppress(FileNotFoundError, PermissionError):
            lines = [
                line
                for line in self.log_file.read_text(encoding="utf-8", errors="replace").splitlines()
                if "FATAL" in line or "PANIC" in line or "ERROR" in line
            ]
        if lines:
            return lines[-1].split("  ", 1)[-1].strip()
        text = (result.stderr or result.stdout).strip()
        return text.splitlines()[-1] if text else f"pg_ctl exited {result.returncode}"


def server_state(home: Path) -> ServerState:
    """What runs in the cluster at `home`, read from postmaster.pid (pg_ctl itself refuses to
    run as root). Needs no binaries: telling whether a server runs starts no program.

    The pid must name a live process: a killed server stays a zombie until its parent reaps it
    (on a machine whose init never reaps, forever), and a zombie's pid still answers `kill -0`."""
    lock = _read_lock(home)
    if lock is None or not _is_server(lock):
        return ServerState(False, None, None)
    return ServerState(True, lock.pid, lock.port)


@dataclass(frozen=True)
class ServerLock:
    """The fields of postmaster.pid that matter here."""

    pid: int
    port: int | None
    shmem_id: int | None  # the System V segment every process of that server attaches
    started: int | None = None  # when the server wrote it (seconds since the epoch)


def _read_lock(home: Path) -> ServerLock | None:
    try:
        lines = (home / DATA_DIR / "postmaster.pid").read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, PermissionError):
        return None
    try:
        pid = int(lines[0])
        port = int(lines[3]) if len(lines) > 3 else None
    except (ValueError, IndexError):
        return None
    shmem: int | None = None
    with contextlib.suppress(ValueError, IndexError):
        shmem = int(lines[6].split()[1])
    started: int | None = None
    with contextlib.suppress(ValueError, IndexError):
        started = int(lines[2])
    return ServerLock(pid, port, shmem, started)


def _is_server(lock: ServerLock) -> bool:
    """Whether the process the lock names is the server that wrote it: alive, and started
    just before the lock's time. A killed server's pid may since have gone to another
    process (pids are reused), which must not count as the server running."""
    if not proc.is_alive(lock.pid):
        return False
    if not lock.started:
        return True  # no start time to compare (not PostgreSQL's own lock): the pid decides
    began = proc.started_at(lock.pid)
    if began is None:
        return False
    return lock.started - LOCK_WRITTEN_WITHIN_S <= began <= lock.started + CLOCK_SLACK_S


def _attached(shmem_id: int) -> int:
    """How many processes still attach the server's shared memory segment (0: none, or the
    segment is gone)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/sysvipc/shm").read_text(encoding="utf-8").splitlines()[1:]:
            fields = line.split()
            if len(fields) > 6 and fields[1] == str(shmem_id):
                return int(fields[6])
    return 0


def clear_dead_lock(home: Path, *, wait_s: float = DEAD_SERVER_WAIT_S) -> bool:
    """Remove the postmaster.pid of a server that was killed, when PostgreSQL itself would take
    it for a live one (its pid is a zombie) and so refuse to
    start. Only once no process of the dead server still attaches its shared memory (its
    backends notice the postmaster's death and exit): two servers on one data folder would
    corrupt it. True when a lock was removed."""
    lock = _read_lock(home)
    if lock is None or not proc.exists(lock.pid) or _is_server(lock):
        return False  # no lock, a lock PostgreSQL sees as stale itself, or a live server
    deadline = time.monotonic() + wait_s
    while lock.shmem_id is not None and _attached(lock.shmem_id) > 0:
        if time.monotonic() > deadline:
            raise UsageError(
                f"the database server (pid {lock.pid}) of {home} was killed, but "
                f"{_attached(lock.shmem_id)} of its processes still run",
                fix="wait for them to end (or stop them: `ps -ef | grep postgres`), then "
                "`consort db start`",
            )
        time.sleep(0.05)
    with contextlib.suppress(FileNotFoundError):
        (home / DATA_DIR / "postmaster.pid").unlink()
    return True


# ---- the pristine cluster ------------------------------------------------------------------

PRISTINE_HBA = """\
# Consort: password logins over loopback TCP only; who may open which database is decided by
# CONNECT privileges (each branch database admits only its own role).
host    all     all     127.0.0.1/32    scram-sha-256
host    all     all     ::1/128         scram-sha-256
"""


def ensure_pristine(binaries: PgBinaries, account: ServerAccount) -> Path:
    """The machine's initialised, never-started cluster for this PostgreSQL version."""
    version = binaries.version()
    root = account.cache_dir() / "pristine"
    target = root / version / "data"
    if (target / "PG_VERSION").exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / f".{version}.lock"):
        if (target / "PG_VERSION").exists():
            return target
        work = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=root))
        try:
            os.chmod(work, 0o700)
            pwfile = work / "pw"
            # Throw-away password: every project's copy gets its own before its first start.
            pwfile.write_text(os.urandom(16).hex() + "\n", encoding="utf-8")
            account.chown(work)
            data = work / "data"
            argv = [
                str(binaries.tool("initdb")),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--auth=scram-sha-256",
                f"--pwfile={pwfile}",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-instructions",
            ]
            proc.run(account.command(argv), timeout=300)
            (data / "pg_hba.conf").write_text(PRISTINE_HBA, encoding="utf-8")
            with (data / "postgresql.conf").open("a", encoding="utf-8") as conf:
                conf.write(f"\ninclude_if_exists = '{CONF_INCLUDE}'\n")
            account.chown(data)
            pwfile.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(data, target)
        except proc.CommandFailed as exc:
            raise ConsortError(f"initdb failed: {exc}") from exc
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target
