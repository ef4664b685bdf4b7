"""Tearing down one project's share of a PostgreSQL server others use too.

On `backend = "postgres"` every database and role Consort makes carries the project's
namespace prefix. A prefix alone does not prove ownership: project `app` (prefix `app_`) and
project `app_x` (prefix `app_x_`) share the first characters, and `app_x_main` looks like a
branch `x_main` of `app`. So a database is this project's only when its name is exactly what
this project's own naming would produce for what the catalog says it is (its Consort
comment): a branch's name is `map_branch(branch, namespace)`, a throwaway child's is
`child_name` of its recorded parent (itself ours), an internal one is
`<namespace>consort_<kind>_…` (snapshots, staging copies, and the children older versions named
`consort_eph_…`). A role is ours when Consort tagged it and it belongs to one of
our databases, or it is the orphaned role of one of our internal databases. Anything else is
left alone. (An orphaned branch role, or that of a throwaway child whose database a crash
already dropped, cannot be told from another project's, so it stays.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from consort.adapters.db.branching import ROLE_COMMENT, DbInfo, DbKind, _q
from consort.adapters.db.names import (
    HASH_CHARS,
    INTERNAL_PREFIX,
    ROLE_SUFFIX,
    child_name,
    map_branch,
)
from consort.core.errors import ConsortError

if TYPE_CHECKING:
    import psycopg

    from consort.adapters.db.backend import Backend

# The internal kinds and the catalog kind each must carry (staging copies: any, or none yet).
_INTERNAL_KINDS: dict[str, DbKind | None] = {
    "eph": DbKind.EPHEMERAL,
    "snap": DbKind.SNAPSHOT,
    "new": None,
}
_INTERNAL = re.compile(re.escape(INTERNAL_PREFIX) + r"(eph|snap|new)_[a-z0-9_]+")


@dataclass(frozen=True)
class CatalogDatabase:
    name: str
    comment: str | None


@dataclass(frozen=True)
class CatalogRole:
    name: str
    comment: str | None


@dataclass(frozen=True)
class Owned:
    databases: tuple[str, ...]
    roles: tuple[str, ...]


def _internal_kind(name: str, namespace: str) -> str | None:
    if not name.startswith(namespace):
        return None
    match = _INTERNAL.fullmatch(name[len(namespace) :])
    return match.group(1) if match else None


def _verdict(
    db: CatalogDatabase, namespace: str, catalog: dict[str, CatalogDatabase]
) -> DbInfo | bool:
    """`_database_is_ours`, and for a throwaway child named like a branch database, whether
    its parent (in `catalog`, by name) is ours."""
    info = DbInfo.from_catalog(db.name, db.comment, None)
    if (
        namespace
        and db.name.startswith(namespace)
        and info is not None
        and info.kind is DbKind.EPHEMERAL
        and _internal_kind(db.name, namespace) is None
    ):
        return _child_is_ours(db, info, namespace, catalog)
    return _database_is_ours(db, namespace)


def _database_is_ours(db: CatalogDatabase, namespace: str) -> DbInfo | bool:
    """False: not ours. True: ours without a record (a staging copy). A DbInfo: ours."""
    if not namespace or not db.name.startswith(namespace):
        return False
    info = DbInfo.from_catalog(db.name, db.comment, None)
    kind = _internal_kind(db.name, namespace)
    if kind is not None:
        wanted = _INTERNAL_KINDS[kind]
        if wanted is None:
            return info if info is not None else True
        return info if info is not None and info.kind is wanted else False
    if info is None or info.kind is not DbKind.BRANCH or info.branch is None:
        return False
    try:
        expected = map_branch(info.branch, namespace).database
    except ConsortError:  # a branch name this project could not have made
        return False
    return info if expected == db.name else False


def _child_is_ours(
    db: CatalogDatabase, info: DbInfo, namespace: str, catalog: dict[str, CatalogDatabase]
) -> DbInfo | bool:
    """A throwaway child is named like a branch database (`child_name`): it is ours when the
    branch database it records as its parent is ours and our naming makes its name from it."""
    parent = catalog.get(info.parent or "")
    if parent is None or not isinstance(_database_is_ours(parent, namespace), DbInfo):
        return False
    token = db.name[-HASH_CHARS:]
    try:
        expected = child_name(parent.name, token, namespace)
    except ValueError:
        return False
    return info if expected == db.name else False


def select_owned(
    namespace: str, databases: Iterable[CatalogDatabase], roles: Iterable[CatalogRole]
) -> Owned:
    """The databases and roles of the project with `namespace`, from a server's catalog."""
    ours: list[str] = []
    their_roles: set[str] = set()
    kept_roles: set[str] = set()  # roles some database we keep still names
    databases = list(databases)
    catalog = {db.name: db for db in databases}
    for db in databases:
        verdict = _verdict(db, namespace, catalog)
        if verdict is False:
            other = DbInfo.from_catalog(db.name, db.comment, None)
            if other is not None:
                kept_roles.add(other.role)
            continue
        ours.append(db.name)
        their_roles.add(db.name + ROLE_SUFFIX)
        if isinstance(verdict, DbInfo):
            their_roles.add(verdict.role)
    owned_roles = []
    for role in roles:
        if role.comment != ROLE_COMMENT or not role.name.startswith(namespace) or not namespace:
            continue
        stem = role.name.removesuffix(ROLE_SUFFIX)
        orphan_internal = role.name.endswith(ROLE_SUFFIX) and _internal_kind(stem, namespace)
        if (role.name in their_roles or orphan_internal) and role.name not in kept_roles:
            owned_roles.append(role.name)
    return Owned(tuple(sorted(ours)), tuple(sorted(owned_roles)))


def drop_owned(backend: Backend) -> list[str]:
    """Drop this project's databases and roles on the server; what went, as "database x"/"role x".

    Sessions on each database are ended first; running it again drops nothing."""
    with backend.admin() as conn:
        databases = [
            CatalogDatabase(str(name), comment)
            for name, comment in conn.execute(
                "SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database"
            ).fetchall()
        ]
        roles = [
            CatalogRole(str(name), comment)
            for name, comment in conn.execute(
                "SELECT rolname, shobj_description(oid, 'pg_authid') FROM pg_roles"
            ).fetchall()
        ]
        owned = select_owned(backend.namespace, databases, roles)
        dropped: list[str] = []
        for name in owned.databases:
            _drop_database(conn, name)
            dropped.append(f"database {name}")
        for role in owned.roles:
            try:
                conn.execute(f"DROP ROLE IF EXISTS {_q(role)}")
            except Exception as exc:
                raise ConsortError(f"cannot drop role {role}: {_reason(exc)}") from exc
            dropped.append(f"role {role}")
    return dropped


def _drop_database(conn: psycopg.Connection[Any], name: str) -> None:
    import psycopg

    try:
        # No new sessions, then end the open ones, then drop (FORCE ends any that slipped in).
        conn.execute(f"ALTER DATABASE {_q(name)} ALLOW_CONNECTIONS false")
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        conn.execute(f"ALTER DATABASE {_q(name)} IS_TEMPLATE false")
        conn.execute(f"DROP DATABASE IF EXISTS {_q(name)} WITH (FORCE)")
    except psycopg.Error as exc:
        raise ConsortError(f"cannot drop database {name}: {_reason(exc)}") from exc


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__
