"""Branch databases: copies of a parent made with CREATE DATABASE ... TEMPLATE ... STRATEGY
(WAL_LOG for small parents, FILE_COPY for large ones or where it clones files: `copy_strategy`).

Every database Consort makes carries a JSON comment saying what it is (a branch's database, a
frozen snapshot used as a template, or an ephemeral child for one verification run), so the
catalog itself is the registry and nothing can disagree with it. A database is built under a
temporary `consort_new_*` name and renamed only once complete: a crash mid-way leaves nothing
that looks like a branch, and `gc` removes the remains.

PostgreSQL copies a template only while nobody else is connected to it. Two ways are offered:

* DISCONNECT (default): block new connections to the parent, end its sessions at once, copy,
  allow connections again. Fast, and always up to date; an application connected to the parent
  sees its connection closed and must reconnect.
* SNAPSHOT: copy the parent once into a frozen template (no one may connect to it) per branch
  point, then make any number of children from that snapshot without touching the parent again.
  Suited to a parent in active use that must not be interrupted more than once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from consort.adapters.background import Background
from consort.adapters.db.names import (
    HASH_CHARS,
    INTERNAL_PREFIX,
    ROLE_SUFFIX,
    child_name,
    internal_name,
)
from consort.core.crashpoint import crash_point
from consort.core.errors import ConsortError, UsageError

if TYPE_CHECKING:
    import psycopg

    from consort.adapters.db.backend import Backend, Endpoint

TERMINATE_WAIT_S = 10.0
EXIT_WAIT_S = 2.0  # how long a copy waits for its own closed session's process to exit
WAL_LOG_BELOW_BYTES = 64 * 1024 * 1024
"""Copies of a database smaller than this are made with `STRATEGY WAL_LOG`, larger ones with
`FILE_COPY`. FILE_COPY waits for a checkpoint before the copy and another after it, and fsyncs
every file it copies: on a disk where fsync is slow that is most of a small copy's time (and a
test run's throwaway child is a copy of a small database). WAL_LOG writes the copy through the
write-ahead log instead, one sync at commit, at the price of writing the whole database to the
log: for large databases FILE_COPY's fixed cost matters less than that volume. Measured on the
2-core ext4 machine Consort is developed on, create + drop, median of 3 after a CHECKPOINT:
16 MB 0.52 s FILE_COPY / 0.15 s WAL_LOG, 34 MB 0.89 / 0.44, 69 MB 1.06 / 0.74, 138 MB 1.94 /
1.67; the threshold stays below the sizes where the two come close."""
FAULT_ENV = "CONSORT_FAULT"  # test hook: inject a failure at a named point


class DbKind(StrEnum):
    BRANCH = "branch"
    SNAPSHOT = "snapshot"
    EPHEMERAL = "ephemeral"


class TemplateMode(StrEnum):
    DISCONNECT = "disconnect"
    SNAPSHOT = "snapshot"


class CopyStrategy(StrEnum):
    """How `CREATE DATABASE` copies a template: AUTO chooses by size (`copy_strategy`); the
    others force one (the benchmark sets them side by side)."""

    AUTO = "auto"
    WAL_LOG = "WAL_LOG"
    FILE_COPY = "FILE_COPY"


@dataclass(frozen=True)
class DbInfo:
    database: str
    kind: DbKind
    role: str
    branch: str | None  # the git branch, for kind BRANCH
    parent: str | None  # the database it was copied from
    created: str
    pid: int | None  # the creating process, for ephemeral children
    host: str | None
    point: str | None = None  # the branch point a snapshot freezes
    size_bytes: int | None = None
    oid: int | None = None  # the catalog's id: the name of the database's folder
    # What Consort last migrated it with (see `consort.adapters.tdd.migrated`); None: unknown.
    migrated: dict[str, Any] | None = None

    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "consort": 1,
            "kind": self.kind.value,
            "role": self.role,
            "branch": self.branch,
            "parent": self.parent,
            "created": self.created,
            "pid": self.pid,
            "host": self.host,
            "point": self.point,
        }
        if self.migrated is not None:
            meta["migrated"] = self.migrated
        return meta

    @staticmethod
    def from_catalog(
        database: str, comment: str | None, size: int | None, oid: int | None = None
    ) -> DbInfo | None:
        if not comment:
            return None
        try:
            meta = json.loads(comment)
            if not isinstance(meta, dict) or meta.get("consort") != 1:
                return None
            return DbInfo(
                database=database,
                kind=DbKind(meta["kind"]),
                role=str(meta["role"]),
                branch=meta.get("branch"),
                parent=meta.get("parent"),
                created=str(meta.get("created", "")),
                pid=meta.get("pid"),
                host=meta.get("host"),
                point=meta.get("point"),
                size_bytes=size,
                oid=oid,
                migrated=meta["migrated"] if isinstance(meta.get("migrated"), dict) else None,
            )
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class Ephemeral:
    """A throwaway child database for one verification run. `admin` is the administrator's
    connection the child was built with, held until its drop: questions about the child (is it
    still there, how many sessions did it have) are asked over it, without a login each."""

    database: str
    role: str
    url: str
    admin: psycopg.Connection[Any] | None = field(default=None, repr=False, compare=False)
    # The parent's record of what Consort migrated it with, where it held still across the
    # copy (see `consort.adapters.tdd.migrated`); None: unknown.
    migrated: dict[str, Any] | None = None

    def present(self) -> bool:
        """Whether the child is still in the catalog."""
        if self.admin is None:
            return True
        return _exists(self.admin, self.database)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def inject_fault(point: str) -> None:
    if os.environ.get(FAULT_ENV) == point:
        raise ConsortError(f"injected failure at {point}")


class BranchDatabases:
    """Create, list and drop the databases of branches, snapshots and ephemeral children."""

    def __init__(self, backend: Backend, strategy: CopyStrategy = CopyStrategy.AUTO):
        self.backend = backend
        self.strategy = strategy

    # ---- reading ---------------------------------------------------------------------------

    def _admin(
        self, conn: psycopg.Connection[Any] | None
    ) -> contextlib.AbstractContextManager[psycopg.Connection[Any]]:
        return _admin_or(self.backend, conn)

    def infos(
        self, *, sizes: bool = False, using: psycopg.Connection[Any] | None = None
    ) -> list[DbInfo]:
        """Every database Consort made; `sizes` adds their sizes (a stat of every file)."""
        with self._admin(using) as conn:
            rows = conn.execute(_infos_query(sizes)).fetchall()
        infos = [
            DbInfo.from_catalog(name, comment, size, int(oid)) for name, comment, size, oid in rows
        ]
        return [info for info in infos if info is not None]

    def listing(self, *, sizes: bool = False) -> list[DbInfo]:
        """`infos` for a command whose whole use of the server is this one read (`consort
        status`, `consort branch list`): read without loading the driver where the server
        allows (`consort.adapters.db.backend.read_catalog`)."""
        from consort.adapters.db.backend import read_catalog

        infos = [
            DbInfo.from_catalog(
                str(name), comment, None if size is None else int(size), int(str(oid))
            )
            for name, comment, size, oid in read_catalog(self.backend, _infos_query(sizes))
        ]
        return [info for info in infos if info is not None]

    def get(self, database: str, using: psycopg.Connection[Any] | None = None) -> DbInfo | None:
        with self._admin(using) as conn:
            row = conn.execute(
                "SELECT d.datname, shobj_description(d.oid, 'pg_database'), NULL::bigint"
                " FROM pg_database d WHERE d.datname = %s AND (d.datallowconn OR d.datistemplate)",
                (database,),
            ).fetchone()
        return None if row is None else DbInfo.from_catalog(row[0], row[1], row[2])

    def exists(self, database: str) -> bool:
        with self.backend.admin() as conn:
            row = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
            ).fetchone()
        return row is not None

    # ---- creating --------------------------------------------------------------------------

    def create_root(self, branch: str, database: str, role: str) -> DbInfo:
        """The first branch database (usually `main`): empty, owned by its own role."""
        info = DbInfo(
            database, DbKind.BRANCH, role, branch, None, _now(), None, socket.gethostname()
        )
        self._build(info, template="template0", source_role=None)
        return info

    def create_branch(
        self,
        branch: str,
        database: str,
        role: str,
        parent: str,
        *,
        mode: TemplateMode = TemplateMode.DISCONNECT,
        point: str | None = None,
    ) -> DbInfo:
        info = DbInfo(
            database, DbKind.BRANCH, role, branch, parent, _now(), None, socket.gethostname()
        )
        with self.backend.admin() as conn:  # one login for the lookup and the whole build
            parent_info = self._require(parent, conn)
            template, source_role = self._template_for(parent_info, mode, point)
            carried = self._build(
                info,
                template=template,
                source_role=source_role,
                using=conn,
                parent=parent_info if mode is TemplateMode.DISCONNECT else None,
            )
        return info if carried is None else dataclasses.replace(info, migrated=carried)

    def _stable_record(
        self, before: DbInfo, conn: psycopg.Connection[Any]
    ) -> dict[str, Any] | None:
        """The parent's migration record where it is the same after a copy as before it: a
        migration of the parent meanwhile clears it first (`set_migrated`), so a copy made
        while it ran carries nothing. A copy of a snapshot (made earlier) carries nothing:
        callers pass no parent then."""
        if before.migrated is None:
            return None
        after = DbInfo.from_catalog(before.database, _comment(conn, before.database), None)
        return before.migrated if after is not None and after.migrated == before.migrated else None

    def set_migrated(self, database: str, record: dict[str, Any] | None) -> None:
        """Record (or, with None, forget) what Consort migrated branch `database` with."""
        with self.backend.admin() as conn:
            info = self.get(database, conn)
            if info is None or info.kind is not DbKind.BRANCH or info.migrated == record:
                return
            _set_comment(conn, database, dataclasses.replace(info, migrated=record))

    def snapshot(self, parent: str, point: str | None = None) -> DbInfo:
        """A frozen copy of `parent` to branch from; reused for the same (parent, point)."""
        parent_info = self._require(parent)
        if point is not None:
            for info in self.infos():
                if info.kind is DbKind.SNAPSHOT and info.parent == parent and info.point == point:
                    return info
        token = hashlib.sha256(parent.encode()).hexdigest()[:8] + "_" + secrets.token_hex(4)
        name = internal_name("snap", token, self.backend.namespace)
        info = DbInfo(
            name,
            DbKind.SNAPSHOT,
            parent_info.role,  # objects inside keep the parent's owner until a child reassigns them
            None,
            parent,
            _now(),
            None,
            socket.gethostname(),
            point,
        )
        with self.backend.admin() as conn:
            staging = self._staging_name()
            self._copy_disconnecting(conn, staging, parent)
            try:
                _set_comment(conn, staging, info)
                conn.execute(f"ALTER DATABASE {_q(staging)} RENAME TO {_q(name)}")
                conn.execute(
                    f"ALTER DATABASE {_q(name)} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"
                )
            except BaseException:
                _drop_quietly(conn, staging)
                raise
        return info

    def planned_ephemeral(self, parent: str) -> Ephemeral:
        """The name, login and URL a throwaway child of `parent` will have when `ephemeral` is
        given it: nothing exists yet, so nothing can log in with it before then."""
        # Named like a branch database (see `child_name`); the catalog comment keeps its kind.
        name = child_name(parent, secrets.token_hex(HASH_CHARS // 2), self.backend.namespace)
        role = name + ROLE_SUFFIX
        return Ephemeral(name, role, self.backend.login_url(name, role))

    @contextlib.contextmanager
    def ephemeral(
        self,
        parent: str,
        mode: TemplateMode = TemplateMode.DISCONNECT,
        point: str | None = None,
        *,
        planned: Ephemeral | None = None,
    ) -> Iterator[Ephemeral]:
        """A throwaway child of `parent`, dropped when the block ends, however it ends; named
        and reached as `planned` says (`planned_ephemeral`), or as a new plan for it.

        In SNAPSHOT mode, `point` names the branch point (a commit, say): children of the same
        point share one frozen snapshot, so the parent is interrupted once per point.
        """
        name = (planned or self.planned_ephemeral(parent)).database
        info = DbInfo(
            name,
            DbKind.EPHEMERAL,
            name + ROLE_SUFFIX,
            None,
            parent,
            _now(),
            os.getpid(),
            socket.gethostname(),
        )
        # One login for the child's whole life, its build and its drop (a login costs a round
        # of SCRAM); it waits on the maintenance database while the child is in use.
        conn = self.backend.admin()
        try:
            parent_info = self._require(parent, conn)
            template, source_role = self._template_for(parent_info, mode, point)
            carried = self._build(
                info,
                template=template,
                source_role=source_role,
                using=conn,
                parent=parent_info if mode is TemplateMode.DISCONNECT else None,
            )
        except BaseException:
            conn.close()
            raise
        try:
            yield Ephemeral(name, info.role, self.backend.login_url(name, info.role), conn, carried)
        finally:
            self._retire(name, info.role, conn)

    def _retire(self, name: str, role: str, conn: psycopg.Connection[Any]) -> None:
        """End a throwaway child: at once, nobody can log in to it or stay connected; the drop
        itself (which waits for a checkpoint) is left to `DROPS`, off the caller's path. Where
        the connection broke meanwhile, the drop is made here with a new one."""
        if conn.closed or conn.broken:
            conn.close()
            _drop_or_leave(self, name, role)
            return
        try:
            # The login ends first (committed), then the sessions, each waited for until it is
            # gone (PostgreSQL 14's timeout argument): none can start or linger between.
            if _role_exists(conn, role):
                conn.execute(f"ALTER ROLE {_q(role)} NOLOGIN")
            conn.execute(
                "SELECT pg_terminate_backend(pid, %s) FROM pg_stat_activity"
                " WHERE datname = %s OR usename = %s",
                (int(TERMINATE_WAIT_S * 1000), name, role),
            )
        except Exception:
            conn.close()
            _drop_or_leave(self, name, role)
            return
        except BaseException:
            conn.close()
            raise
        DROPS.submit((self, name, role, conn))

    def drop_left_behind(self) -> list[str]:
        """Drop again this process's throwaway children on this server whose drop failed
        (`LEFT_BEHIND`), once the drops under way have ended; the names now dropped. Called
        when the server answers again after it went away: the drive that made them goes on,
        and `gc` would leave a living process's children alone."""
        DROPS.finish()
        dropped = []
        for name, role in LEFT_BEHIND.of(self.backend.endpoint):
            # one that fails again is still for `gc`, once this process has ended
            with contextlib.suppress(Exception):
                self.drop(name, role=role)
                LEFT_BEHIND.forget(self.backend.endpoint, name)
                dropped.append(name)
        return dropped

    # ---- dropping --------------------------------------------------------------------------

    def drop(
        self,
        database: str,
        using: psycopg.Connection[Any] | None = None,
        *,
        role: str | None = None,
    ) -> None:
        """Drop a database, the snapshots taken of it, and its role (`role`, where the caller
        knows it: a database dropped already by someone else leaves its role to drop)."""
        with self._admin(using) as conn:
            infos = self.infos(using=conn)
            snapshots = {
                i.database for i in infos if i.kind is DbKind.SNAPSHOT and i.parent == database
            }
            for snapshot in sorted(snapshots):
                _drop_quietly(conn, snapshot)
            target = next((i for i in infos if i.database == database), None)
            if target is not None and target.kind is DbKind.SNAPSHOT:
                conn.execute(f"ALTER DATABASE {_q(database)} IS_TEMPLATE false")
            conn.execute(f"DROP DATABASE IF EXISTS {_q(database)} WITH (FORCE)")
            gone = snapshots | {database}
            role = target.role if target is not None else role
            still_used = any(i.role == role and i.database not in gone for i in infos)
            if role and role.endswith(ROLE_SUFFIX) and not still_used:
                conn.execute(f"DROP ROLE IF EXISTS {_q(role)}")

    def gc(self, live_branches: set[str] | None) -> list[str]:
        """Drop branch databases whose git branch is gone, dead processes' children, orphans.

        With `live_branches` None, branch databases are all kept: only what a crash leaves
        (children of dead processes, half-built copies, orphaned snapshots and roles) goes, and
        the databases a crash left refusing connections are opened again."""
        dropped: list[str] = []
        infos = self.infos()
        here = socket.gethostname()
        doomed: list[DbInfo] = []
        for info in infos:
            gone = live_branches is not None and info.branch not in live_branches
            if (info.kind is DbKind.BRANCH and gone) or (
                info.kind is DbKind.EPHEMERAL and info.host == here and not _alive(info.pid)
            ):
                doomed.append(info)
        alive_names = {i.database for i in infos} - {d.database for d in doomed}
        doomed += [i for i in infos if i.kind is DbKind.SNAPSHOT and i.parent not in alive_names]
        for info in doomed:
            self.drop(info.database)
            dropped.append(info.database)
        with self.backend.admin() as conn:
            for (name,) in conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s",
                (f"{self.backend.namespace}{INTERNAL_PREFIX}new_%",),
            ).fetchall():
                pid = _pid_in_staging_name(name)
                if not _alive(pid):
                    _drop_quietly(conn, name)
                    dropped.append(name)
            dropped += self._drop_orphan_roles(conn)
        self.heal()
        return dropped

    def heal(self) -> list[str]:
        """Re-allow connections to branch databases a crash left blocked mid-copy; their names."""
        healed = []
        with self.backend.admin() as conn:
            rows = conn.execute(
                "SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database"
                " WHERE NOT datallowconn AND NOT datistemplate"
            ).fetchall()
            for name, comment in rows:
                info = DbInfo.from_catalog(name, comment, None)
                if info is not None and info.kind is DbKind.BRANCH:
                    conn.execute(f"ALTER DATABASE {_q(name)} ALLOW_CONNECTIONS true")
                    healed.append(str(name))
        return healed

    # ---- internals -------------------------------------------------------------------------

    def _require(self, database: str, using: psycopg.Connection[Any] | None = None) -> DbInfo:
        info = self.get(database, using)
        if info is None:
            raise UsageError(f"database {database!r} does not exist or is not Consort's")
        return info

    def _template_for(
        self, parent: DbInfo, mode: TemplateMode, point: str | None
    ) -> tuple[str, str]:
        if mode is TemplateMode.SNAPSHOT and parent.kind is not DbKind.SNAPSHOT:
            snap = self.snapshot(parent.database, point=point)
            return snap.database, parent.role
        return parent.database, parent.role

    def _staging_name(self) -> str:
        return internal_name("new", f"{os.getpid()}_{secrets.token_hex(4)}", self.backend.namespace)

    def _build(
        self,
        info: DbInfo,
        *,
        template: str,
        source_role: str | None,
        using: psycopg.Connection[Any] | None = None,
        parent: DbInfo | None = None,
    ) -> dict[str, Any] | None:
        """Create `info.database` from `template` under a staging name, then rename it in place.

        `parent`, where the copy is made of a branch database itself (not of a snapshot), is
        its entry as the caller read it before: its migration record is carried into the copy
        where it held still across it (`_stable_record`); returned, None where none was.

        Three commits: the copy; inside the copy, one transaction for the role, the objects'
        new owner, the grants and the comment; the rename that makes it appear under its name.
        The role is made after the copy, so a failed copy leaves no role behind. Every question
        before the copy is one query, and the transaction inside is sent as one batch: a round
        trip is cheap on an idle machine, but each waits for both processes to be scheduled."""
        with self._admin(using) as conn:
            before = _before_copy(conn, info.database, info.role, template, source_role)
            if before.target_exists:
                raise UsageError(f"database {info.database!r} already exists")
            staging = self._staging_name()
            created_role = False
            try:
                if parent is not None and parent.database == template:
                    template_info: DbInfo | None = parent  # read by the caller already
                elif template in ("template0", "template1"):
                    template_info = None
                else:
                    template_info = DbInfo.from_catalog(template, before.template_comment, None)
                strategy = (
                    self.strategy.value
                    if self.strategy is not CopyStrategy.AUTO
                    else _strategy_for(before.template_size, before.file_copy_method)
                )
                if template_info is None or template_info.kind is DbKind.SNAPSHOT:
                    # template0 or a frozen snapshot: nobody may connect to it
                    conn.execute(
                        f"CREATE DATABASE {_q(staging)} TEMPLATE {_q(template)} STRATEGY {strategy}"
                    )
                else:
                    self._copy_disconnecting(conn, staging, template, strategy)
                inject_fault("db-copied")
                carried = None if parent is None else self._stable_record(parent, conn)
                if carried is not None and info.kind is DbKind.BRANCH:
                    info = dataclasses.replace(info, migrated=carried)
                with _connect_as_admin(self.backend, staging) as inside, inside.transaction():
                    created_role = not before.role_exists
                    inside.execute(
                        _configure_copy(
                            inside,
                            staging,
                            info,
                            self.backend.password(info.role),
                            role_exists=before.role_exists,
                            reassign_from=(
                                source_role
                                if source_role is not None
                                and source_role != info.role
                                and before.source_role_exists
                                else None
                            ),
                            own_schema=source_role is None or source_role == info.role,
                        )
                    )
                    inject_fault("db-configured")
                    inside_pid = inside.info.backend_pid
                self._await_exit(conn, inside_pid)
                conn.execute(f"ALTER DATABASE {_q(staging)} RENAME TO {_q(info.database)}")
            except BaseException:
                _drop_quietly(conn, staging)
                if created_role:
                    with contextlib.suppress(Exception):
                        conn.execute(f"DROP ROLE IF EXISTS {_q(info.role)}")
                raise
        return carried

    def _await_exit(self, conn: psycopg.Connection[Any], pid: int) -> None:
        """Wait, briefly, until the server process of a connection just closed has exited.
        Renaming its database waits for it too, but checks in steps of 100 ms: most of a small
        copy's time. The embedded server runs here, so its process is looked at directly;
        another server is asked whether the session is still listed."""
        from consort.adapters import proc
        from consort.core.config import DbBackendKind

        local = self.backend.kind is DbBackendKind.EMBEDDED
        deadline = time.monotonic() + EXIT_WAIT_S
        while time.monotonic() < deadline:
            if local:
                gone = not proc.is_alive(pid)
            else:
                listed = "SELECT 1 FROM pg_stat_activity WHERE pid = %s"
                gone = conn.execute(listed, (pid,)).fetchone() is None
            if gone:
                return
            time.sleep(0.002)

    def _strategy(self, conn: psycopg.Connection[Any], template: str) -> str:
        if self.strategy is not CopyStrategy.AUTO:
            return self.strategy.value
        return copy_strategy(conn, template)

    def _copy_disconnecting(
        self,
        conn: psycopg.Connection[Any],
        target: str,
        parent: str,
        strategy: str | None = None,
    ) -> None:
        """CREATE DATABASE target TEMPLATE parent, after ending every session on the parent.

        With nobody connected to the parent, the copy is made at once: PostgreSQL itself holds
        a new connection to the template back (a lock) until the copy is done. Only where
        sessions are connected are new connections refused, those sessions ended, and
        connections allowed again after the copy: two commits and a window in which a crash
        leaves the parent refusing connections (`heal` re-allows them)."""
        strategy = strategy or self._strategy(conn, parent)
        create = f"CREATE DATABASE {_q(target)} TEMPLATE {_q(parent)} STRATEGY {strategy}"
        crash_point("branch.copy")
        try:
            conn.execute(create)
            return
        except Exception as exc:
            if not _in_use(exc):
                raise
        conn.execute(f"ALTER DATABASE {_q(parent)} ALLOW_CONNECTIONS false")
        try:
            deadline = time.monotonic() + TERMINATE_WAIT_S
            while True:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = %s AND pid <> pg_backend_pid()",
                    (parent,),
                )
                try:
                    conn.execute(create)
                    return
                except Exception as exc:
                    if not _in_use(exc) or time.monotonic() > deadline:
                        raise
        finally:
            conn.execute(f"ALTER DATABASE {_q(parent)} ALLOW_CONNECTIONS true")

    def _drop_orphan_roles(self, conn: psycopg.Connection[Any]) -> list[str]:
        """Roles Consort made whose database no longer exists (after a crash)."""
        owned = {
            str(row[0])
            for row in conn.execute(
                "SELECT rolname FROM pg_roles WHERE rolname LIKE %s",
                (f"{self.backend.namespace}%{ROLE_SUFFIX}",),
            ).fetchall()
        }
        in_use = {info.role for info in self.infos()}
        dropped = []
        for role in sorted(owned - in_use):
            comment = conn.execute(
                "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = %s",
                (role,),
            ).fetchone()
            if comment is None or comment[0] != ROLE_COMMENT:
                continue  # not ours
            with contextlib.suppress(Exception):
                conn.execute(f"DROP ROLE {_q(role)}")
                dropped.append(f"role {role}")
        return dropped


class _LeftBehind:
    """This process's throwaway children whose drop failed (the server went away, or a
    connection to it broke, while they were dropped), by server: database -> role."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._children: dict[Endpoint, dict[str, str]] = {}

    def add(self, endpoint: Endpoint, name: str, role: str) -> None:
        with self._lock:
            self._children.setdefault(endpoint, {})[name] = role

    def of(self, endpoint: Endpoint) -> list[tuple[str, str]]:
        with self._lock:
            return sorted(self._children.get(endpoint, {}).items())

    def forget(self, endpoint: Endpoint, name: str) -> None:
        with self._lock:
            self._children.get(endpoint, {}).pop(name, None)


LEFT_BEHIND = _LeftBehind()


def _drop_or_leave(
    dbs: BranchDatabases, name: str, role: str, using: psycopg.Connection[Any] | None = None
) -> None:
    """Drop a throwaway child, or note it in `LEFT_BEHIND` and raise why it could not be."""
    try:
        dbs.drop(name, using=using, role=role)
    except Exception:
        LEFT_BEHIND.add(dbs.backend.endpoint, name, role)
        raise


def _drop(item: tuple[BranchDatabases, str, str, psycopg.Connection[Any]]) -> None:
    dbs, name, role, conn = item
    try:
        _drop_or_leave(dbs, name, role, using=conn)
    finally:
        conn.close()


DROPS: Background[tuple[BranchDatabases, str, str, psycopg.Connection[Any]]] = Background(
    _drop, name="consort-drops", timeout=300.0
)
"""This process's throwaway children waiting to be dropped, dropped one after another on a
thread of their own, each with the admin connection that made it.

`DROP DATABASE` waits for a checkpoint: a test run or a turn would pay that at its end. The
child is already out of use when it arrives here (its role cannot log in, its sessions were
ended), so only its storage remains. `finish` waits until every drop handed over is done; it
runs at the end of `drive` and when the interpreter exits. A drop that fails, or that a
`kill -9` cut short, leaves a child of a dead process, which `gc` (the next `drive`'s start
among them) removes."""


ROLE_COMMENT = "consort branch role"


def _q(identifier: str) -> str:
    """Quote an identifier for SQL (names come from our own mapping, quoted all the same)."""
    return '"' + identifier.replace('"', '""') + '"'


def copy_strategy(conn: psycopg.Connection[Any], template: str) -> str:
    """How to copy `template`: FILE_COPY where the server clones files (reflinks: a copy in
    constant time), else WAL_LOG below `WAL_LOG_BELOW_BYTES` and FILE_COPY above."""
    row = conn.execute(
        "SELECT pg_database_size(oid), current_setting('file_copy_method', true)"
        " FROM pg_database WHERE datname = %s",
        (template,),
    ).fetchone()
    return _strategy_for(None, None) if row is None else _strategy_for(row[0], row[1])


def _strategy_for(size: int | None, file_copy_method: str | None) -> str:
    if size is None or file_copy_method == "clone":
        return "FILE_COPY"
    return "WAL_LOG" if int(size) < WAL_LOG_BELOW_BYTES else "FILE_COPY"


@dataclass(frozen=True)
class _BeforeCopy:
    """What a build asks the catalog before its copy, in one query."""

    target_exists: bool
    role_exists: bool
    source_role_exists: bool
    template_comment: str | None
    template_size: int | None
    file_copy_method: str | None


def _before_copy(
    conn: psycopg.Connection[Any], target: str, role: str, template: str, source_role: str | None
) -> _BeforeCopy:
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = %(target)s),"
        " EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %(role)s),"
        " EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %(source)s),"
        " (SELECT shobj_description(oid, 'pg_database') FROM pg_database"
        "  WHERE datname = %(template)s),"
        " (SELECT pg_database_size(oid) FROM pg_database WHERE datname = %(template)s),"
        " current_setting('file_copy_method', true)",
        {"target": target, "role": role, "source": source_role, "template": template},
    ).fetchone()
    if row is None:  # a SELECT without FROM always answers one row
        raise ConsortError("the catalog did not answer")
    return _BeforeCopy(bool(row[0]), bool(row[1]), bool(row[2]), row[3], row[4], row[5])


# The fewest iterations SCRAM allows, for the verifiers of the roles Consort makes: iterations
# stretch a guessable password, and these are 160-bit HMACs of the project secret
# (`password_for`), which no number of guesses finds. PostgreSQL's default of 4096 costs
# each CREATE ROLE and each login of the role (the client repeats them) several milliseconds.
SCRAM_ITERATIONS = 1
SCRAM_ITERATIONS_SINCE = 160000  # server_version_num of PostgreSQL 16


def _configure_copy(
    conn: psycopg.Connection[Any],
    database: str,
    info: DbInfo,
    password: str,
    *,
    role_exists: bool,
    reassign_from: str | None,
    own_schema: bool,
) -> Any:
    """The statements that make a fresh copy `database` its role's, as one batch for the
    connection into it: the login role (made, or its password reset) with its comment, the
    objects' new owner, the database's privileges and its comment."""
    from psycopg import sql

    role = sql.Identifier(info.role)
    db = sql.Identifier(database)
    statements = []
    if conn.info.server_version >= SCRAM_ITERATIONS_SINCE:
        statements.append(sql.SQL("SET LOCAL scram_iterations = {}").format(SCRAM_ITERATIONS))
    verb = "ALTER" if role_exists else "CREATE"
    statements += [
        sql.SQL(verb + " ROLE {} LOGIN NOINHERIT PASSWORD {}").format(role, sql.Literal(password)),
        sql.SQL("COMMENT ON ROLE {} IS {}").format(role, sql.Literal(ROLE_COMMENT)),
    ]
    if reassign_from is not None:
        statements.append(
            sql.SQL("REASSIGN OWNED BY {} TO {}").format(sql.Identifier(reassign_from), role)
        )
    elif own_schema:
        statements.append(sql.SQL("ALTER SCHEMA public OWNER TO {}").format(role))
    statements += [
        sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(db),
        sql.SQL("GRANT CONNECT, CREATE, TEMP ON DATABASE {} TO {}").format(db, role),
        sql.SQL("COMMENT ON DATABASE {} IS {}").format(
            db, sql.Literal(json.dumps(info.meta(), sort_keys=True))
        ),
    ]
    return sql.SQL("; ").join(statements)


def _in_use(exc: Exception) -> bool:
    """Whether a copy failed because other sessions are connected to its template."""
    return "being accessed by other users" in str(exc)


def _exists(conn: psycopg.Connection[Any], database: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        is not None
    )


def _comment(conn: psycopg.Connection[Any], database: str) -> str | None:
    row = conn.execute(
        "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
        (database,),
    ).fetchone()
    return None if row is None else row[0]


def _set_comment(conn: psycopg.Connection[Any], database: str, info: DbInfo) -> None:
    from psycopg import sql

    text = json.dumps(info.meta(), sort_keys=True)
    conn.execute(
        sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(database), sql.Literal(text))
    )


def _role_exists(conn: psycopg.Connection[Any], role: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is not None


def _drop_quietly(conn: psycopg.Connection[Any], database: str) -> None:
    with contextlib.suppress(Exception):
        conn.execute(f"ALTER DATABASE {_q(database)} IS_TEMPLATE false")
    with contextlib.suppress(Exception):
        conn.execute(f"DROP DATABASE IF EXISTS {_q(database)} WITH (FORCE)")


@contextlib.contextmanager
def _admin_or(
    backend: Backend, conn: psycopg.Connection[Any] | None
) -> Iterator[psycopg.Connection[Any]]:
    """`conn` when the caller has one open (a login costs a round of SCRAM), else a new one."""
    if conn is not None:
        yield conn
        return
    with backend.admin() as opened:
        yield opened


def _infos_query(sizes: bool) -> str:
    size = "pg_database_size(d.oid)" if sizes else "NULL::bigint"
    return (
        "SELECT d.datname, shobj_description(d.oid, 'pg_database'), " + size + ", d.oid "
        "FROM pg_database d WHERE d.datallowconn OR d.datistemplate ORDER BY d.datname"
    )


@contextlib.contextmanager
def _connect_as_admin(backend: Backend, database: str) -> Iterator[psycopg.Connection[Any]]:
    conn = backend.admin(database)
    try:
        yield conn
    finally:
        conn.close()


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pid_in_staging_name(name: str) -> int | None:
    try:
        return int(name.rsplit("_", 2)[-2])
    except (ValueError, IndexError):
        return None


def sessions_of(
    backend: Backend,
    database: str,
    *,
    settle_s: float = 5.0,
    using: psycopg.Connection[Any] | None = None,
) -> int:
    """How many sessions the server has counted on `database` (`pg_stat_database.sessions`).

    A backend reports its statistics as it ends, before it leaves `pg_stat_activity`; so the
    count is read once no backend is connected to `database` any more (or after `settle_s`),
    and includes every client that has disconnected. Consort's own admin connections go to
    `postgres`, never here."""
    deadline = time.monotonic() + settle_s
    with _admin_or(backend, using) as conn:
        while True:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            busy = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
            ).fetchone()
            if not busy or not busy[0] or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        row = conn.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", (database,)
        ).fetchone()
    return int(row[0]) if row and row[0] is not None else 0
