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


def internal_name(kind: str, token: str, namespace: str = "") -> str:
    """Names of Consort's own databases (snapshots, ephemeral children), never a branch's."""
    name = f"{namespace}{INTERNAL_PREFIX}{kind}_{token}"
    if len(name.encode()) > MAX_DB_NAME:
        raise UsageError(f"internal database name too long: {name}")
    return name
