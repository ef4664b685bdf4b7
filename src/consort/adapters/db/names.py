"""The stable mapping from git branch names to PostgreSQL database and role names.

Git allows names PostgreSQL identifiers do not ("feature/F1-Stock", 200 characters, non-ASCII).
A branch name that is already a plain lower-case identifier maps to itself; any other name is
sanitised and suffixed with a short hash of the original, so two names never collide and the
same name always maps to the same database.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from consort.core.errors import UsageError

IDENTIFIER_BYTES = 63
ROLE_SUFFIX = "_user"
# Leave room for the role suffix within PostgreSQL's 63-byte identifier limit.
MAX_DB_NAME = IDENTIFIER_BYTES - len(ROLE_SUFFIX)
HASH_CHARS = 8
INTERNAL_PREFIX = "consort_"  # snapshots, ephemeral children and the admin role live here
RESERVED = frozenset({"postgres", "template0", "template1"})
_PLAIN = re.compile(r"[a-z_][a-z0-9_]*")


@dataclass(frozen=True)
class DbNames:
    database: str
    role: str


def map_branch(branch: str, namespace: str = "") -> DbNames:
    """Database and role names for a git branch; refuses names that cannot be mapped safely."""
    if not branch or branch != branch.strip():
        raise UsageError(f"branch name {branch!r} is empty or has surrounding spaces")
    base = _sanitise(branch)
    if not base:
        raise UsageError(f"branch name {branch!r} has no letters or digits to name a database by")
    limit = MAX_DB_NAME - len(namespace)
    exact = _PLAIN.fullmatch(branch) is not None and len(branch) <= limit
    if exact:
        name = branch
    else:
        digest = hashlib.sha256(branch.encode()).hexdigest()[:HASH_CHARS]
        name = f"{base[: limit - HASH_CHARS - 1].rstrip('_')}_{digest}"
    if name in RESERVED or name.startswith(INTERNAL_PREFIX) or name.startswith("pg_"):
        raise UsageError(
            f"branch name {branch!r} maps to the reserved database name {name!r}",
            fix="choose another branch name",
        )
    database = namespace + name
    return DbNames(database=database, role=database + ROLE_SUFFIX)


def _sanitise(branch: str) -> str:
    lowered = branch.lower()
    cleaned = re.sub(r"[^a-z0-9_]+", "_", lowered).strip("_")
    cleaned = re.sub(r"_+", "_", cleaned)
    if cleaned and cleaned[0].isdigit():
        cleaned = "b_" + cleaned
    return cleaned


_HASHED = re.compile(rf"_[0-9a-f]{{{HASH_CHARS}}}")


def child_name(parent: str, token: str, namespace: str = "") -> str:
    """A throwaway child's name, shaped like a branch database's: its parent's name (without
    the namespace and the parent's own hash suffix) and `token` (HASH_CHARS hex digits) where a
    branch name has its hash. A run's database says nothing a branch database would not:
    code that looks for a marker of Consort's runs in its `DATABASE_URL` or in
    `current_database()` finds none."""
    if len(token) != HASH_CHARS or not _HASHED.fullmatch("_" + token):
        raise ValueError(f"a child's token is {HASH_CHARS} hex digits, not {token!r}")
    base = parent[len(namespace) :] if namespace and parent.startswith(namespace) else parent
    if len(base) > HASH_CHARS + 1 and _HASHED.fullmatch(base[-HASH_CHARS - 1 :]):
        base = base[: -HASH_CHARS - 1]
    if base.startswith(INTERNAL_PREFIX):  # a snapshot's child: name it after a plain branch
        base = "branch"
    limit = MAX_DB_NAME - len(namespace) - HASH_CHARS - 1
    base = base[:limit].rstrip("_") or "branch"
    return f"{namespace}{base}_{token}"


def internal_name(kind: str, token: str, namespace: str = "") -> str:
    """Names of Consort's own databases (snapshots, ephemeral children), never a branch's."""
    name = f"{namespace}{INTERNAL_PREFIX}{kind}_{token}"
    if len(name.encode()) > MAX_DB_NAME:
        raise UsageError(f"internal database name too long: {name}")
    return name
