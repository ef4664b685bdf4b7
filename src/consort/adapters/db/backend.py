"""Backends: where branch databases live. Embedded (a private local cluster) or any server URL.

Both give the branching code the same three things: an administrative connection, a login URL
for a role, and whether per-branch roles can be made.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote, urlsplit

from consort.adapters.db.secret import load_secret, password_for
from consort.core.config import DbBackendKind
from consort.core.errors import ConsortError, UsageError
from consort.core.fsutil import atomic_write_json
from consort.core.project import Project

if TYPE_CHECKING:
    import psycopg

    from consort.adapters.db.cluster import LocalCluster

CLUSTER_FILE = "cluster.json"
CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


class Backend(Protocol):
    kind: DbBackendKind

    @property
    def endpoint(self) -> Endpoint: ...

    @property
    def namespace(self) -> str:
        """Prefix of every database and role name Consort makes (empty on a private cluster)."""
        ...

    def ensure_running(self) -> None: ...

    def is_running(self) -> bool:
        """Whether the server runs now (a check of its files, no connection)."""
        ...

    def admin(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        """An autocommit connection with the rights to create databases (and roles)."""
        ...

    def password(self, role: str) -> str: ...

    def login_url(self, dbname: str, role: str) -> str: ...


def _connect(endpoint: Endpoint, user: str, password: str, dbname: str) -> psycopg.Connection[Any]:
    import psycopg

    try:
        return psycopg.connect(
            host=endpoint.host,
            port=endpoint.port,
            user=user,
            password=password,
            dbname=dbname,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            application_name="consort",
        )
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ConsortError(f"cannot connect to database {dbname!r} as {user}: {reason}") from exc


def make_url(endpoint: Endpoint, role: str, password: str, dbname: str) -> str:
    return (
        f"postgresql://{quote(role, safe='')}:{quote(password, safe='')}"
        f"@{endpoint.host}:{endpoint.port}/{quote(dbname, safe='')}"
    )


# ---- embedded -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterRecord:
    """`.consort/db/cluster.json`: where this project's cluster lives and how it runs."""

    home: str
    port: int
    run_as: str | None
    binaries: str | None = None  # `[db] binaries` when it was made (None: an older record)

    def save(self, path: Path) -> None:
        data: dict[str, object] = {"home": self.home, "port": self.port, "run_as": self.run_as}
        if self.binaries is not None:
            data["binaries"] = self.binaries
        atomic_write_json(path, data)

    @staticmethod
    def load(path: Path) -> ClusterRecord:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            made_with = raw.get("binaries")
            return ClusterRecord(
                str(raw["home"]),
                int(raw["port"]),
                raw.get("run_as"),
                str(made_with) if made_with is not None else None,
            )
        except FileNotFoundError as exc:
            raise UsageError(
                f"{path} is missing: this project has no embedded database yet",
                fix="run `consort init` in the project folder",
            ) from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path} is damaged: {exc}") from exc


class EmbeddedBackend:
    kind = DbBackendKind.EMBEDDED

    def __init__(self, project: Project):
        self.project = project
        self.record = ClusterRecord.load(project.db_dir / CLUSTER_FILE)
        self._cluster: LocalCluster | None = None
        self._secret: bytes | None = None

    @property
    def cluster(self) -> LocalCluster:
        if self._cluster is None:
            from consort.adapters.db.account import ServerAccount, reachable_binaries
            from consort.adapters.db.binaries import binaries_for
            from consort.adapters.db.cluster import LocalCluster

            account = ServerAccount(self.record.run_as)
            binaries = reachable_binaries(binaries_for(self.project.config.db.binaries), account)
            self._cluster = LocalCluster(
                Path(self.record.home),
                self.record.port,
                binaries,
                account,
                setting=self.project.config.db.binaries,
                made_with=self.record.binaries,
            )
        return self._cluster

    @property
    def secret(self) -> bytes:
        if self._secret is None:
            self._secret = load_secret(self.project.db_dir)
        return self._secret

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint("127.0.0.1", self.record.port)

    @property
    def namespace(self) -> str:
        return ""

    def ensure_running(self) -> None:
        from consort.adapters.db.cluster import server_state

        # A running server needs no binaries, and finding them starts programs (pg_config,
        # postgres --version): everyday commands such as `consort status` skip that.
        if not server_state(Path(self.record.home)).running:
            from consort.core.fsutil import file_lock

            with file_lock(self.project.db_dir / "server.lock"):
                self.cluster.start()

    def is_running(self) -> bool:
        from consort.adapters.db.cluster import server_state

        return server_state(Path(self.record.home)).running

    def admin(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        from consort.adapters.db.cluster import SUPERUSER

        self.ensure_running()
        try:
            return _connect(self.endpoint, SUPERUSER, self.password(SUPERUSER), dbname)
        except ConsortError as exc:
            if self.is_running():
                raise ConsortError(
                    exc.message,
                    fix="the server runs but does not answer: `consort db stop`, then "
                    f"`consort db start` (its log: {Path(self.record.home) / 'server.log'})",
                ) from exc
        # It died between the check and the connection: start it again, once.
        self.ensure_running()
        return _connect(self.endpoint, SUPERUSER, self.password(SUPERUSER), dbname)

    def password(self, role: str) -> str:
        return password_for(self.secret, role)

    def login_url(self, dbname: str, role: str) -> str:
        return make_url(self.endpoint, role, self.password(role), dbname)


# ---- any PostgreSQL server ------------------------------------------------------------------


class ServerBackend:
    """A PostgreSQL 15+ server given by URL; the URL's role must be allowed to CREATE DATABASE."""

    kind = DbBackendKind.POSTGRES

    def __init__(self, project: Project, url: str):
        self.project = project
        parts = urlsplit(url)
        if parts.scheme not in ("postgresql", "postgres") or not parts.hostname:
            raise UsageError("[db] url must look like postgresql://user:password@host:port/dbname")
        self._url = url
        self._endpoint = Endpoint(parts.hostname, parts.port or 5432)
        self._admin_db = parts.path.lstrip("/") or "postgres"
        self._secret: bytes | None = None

    @property
    def endpoint(self) -> Endpoint:
        return self._endpoint

    @property
    def namespace(self) -> str:
        slug = (
            re.sub(r"[^a-z0-9]+", "_", self.project.root.name.lower()).strip("_")[:16] or "project"
        )
        return f"{slug}_"

    def ensure_running(self) -> None:
        """A shared server is not ours to start."""

    def is_running(self) -> bool:
        return True  # not ours to know without connecting: asked when it is used

    def admin(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        import psycopg

        target = self._admin_db if dbname == "postgres" else dbname
        try:
            return psycopg.connect(
                self._url,
                dbname=target,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT_S,
                application_name="consort",
            )
        except psycopg.OperationalError as exc:
            last = str(exc).strip().splitlines()[-1] if str(exc).strip() else "connection failed"
            raise UsageError(f"cannot connect to the [db] server: {last}") from exc

    def password(self, role: str) -> str:
        if self._secret is None:
            from consort.adapters.db.secret import load_or_create_secret

            self._secret = load_or_create_secret(self.project.db_dir)
        return password_for(self._secret, role)

    def login_url(self, dbname: str, role: str) -> str:
        return make_url(self.endpoint, role, self.password(role), dbname)


def read_catalog(backend: Backend, sql: str) -> list[tuple[str | None, ...]]:
    """The rows of one read-only query as the administrator, each value as text (None for
    NULL). On the embedded server it is asked without loading psycopg (`wire`), which is most
    of a one-read command's time; should that fail in any way, or on any other server (a URL
    may ask for TLS and more), it is asked through psycopg, which reports what is wrong as
    every other command does."""
    if isinstance(backend, EmbeddedBackend):
        from consort.adapters.db import wire
        from consort.adapters.db.cluster import SUPERUSER

        backend.ensure_running()
        endpoint = backend.endpoint
        try:
            return wire.query(
                endpoint.host,
                endpoint.port,
                sql,
                user=SUPERUSER,
                password=backend.password(SUPERUSER),
                dbname="postgres",
                timeout_s=CONNECT_TIMEOUT_S,
            )
        except (OSError, wire.Unsupported, wire.Refused):
            pass  # the driver asks again, and says why it cannot
    with backend.admin() as conn:
        rows = conn.execute(sql).fetchall()
    return [tuple(None if value is None else str(value) for value in row) for row in rows]


def open_backend(project: Project) -> Backend:
    db = project.config.db
    if db.backend is DbBackendKind.EMBEDDED:
        return EmbeddedBackend(project)
    import os

    url = db.url
    if db.url_env:
        url = os.environ.get(db.url_env)
        if not url:
            raise UsageError(f"[db] url_env names {db.url_env}, which is not set")
    if url is None:  # DbSection's validator makes this unreachable; kept for the type checker
        raise UsageError('[db] backend = "postgres" needs url or url_env')
    return ServerBackend(project, url)
