"""A migration leaves the login it runs as as it found it.

Consort migrates a branch database itself with that branch's own login: a story's merge
migrates the feature's database, a promote main's. A plain role may change two things of its
own that outlive the migration and every table: its password (`ALTER ROLE CURRENT_USER
PASSWORD '...'`) and its session defaults (`ALTER ROLE CURRENT_USER [IN DATABASE d] SET ...`).
A migration that does so only there (it can tell the branch's database from a run's throwaway
child by name) passes every rule that reads a candidate's migrations on its child, and leaves
on the feature's or main's login a password it chose: a later turn, which shares the machine's
network, would log in to its parent's database, or main's, with it.

So, around each such migration: the login's session defaults are read before (as the
administrator); after, the login must still open with Consort's own password, and hold the
same defaults. Where it does not, Consort puts its password back, and the defaults, and the
migration is refused (`migration-login`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from consort.core.errors import ConsortError
from consort.core.seal import SealRule, SealViolation

if TYPE_CHECKING:
    import psycopg

    from consort.adapters.db.backend import Backend

CONNECT_TIMEOUT_S = 10

# The login's session defaults, everywhere (setdatabase 0) and in each database, by name.
DEFAULTS = """
SELECT COALESCE(d.datname, ''), s.setconfig
FROM pg_db_role_setting s
LEFT JOIN pg_database d ON d.oid = s.setdatabase
WHERE s.setrole = (SELECT oid FROM pg_roles WHERE rolname = %s)
ORDER BY 1
"""

Defaults = dict[str, tuple[str, ...]]  # database ("" for every one) -> "name=value" entries


@dataclass(frozen=True)
class LoginGuard:
    """The login of one migration, as it stood before it ran."""

    backend: Backend
    url: str
    role: str
    database: str
    defaults: Defaults

    @classmethod
    def before(cls, backend: Backend, url: str) -> LoginGuard:
        parts = urlsplit(url)
        role, database = unquote(parts.username or ""), unquote(parts.path.lstrip("/"))
        with backend.admin() as conn:
            return cls(backend, url, role, database, _defaults(conn, role))

    def after(self) -> list[SealViolation]:
        """What the migration changed of its login, each put back first."""
        found = []
        with self.backend.admin() as conn:
            now = _defaults(conn, self.role)
            if now != self.defaults:
                _restore_defaults(conn, self.role, self.defaults, now)
                found.append(
                    SealViolation(
                        SealRule.MIGRATION_LOGIN,
                        "",
                        f"the migrations changed the session defaults of {self.role}, the "
                        f"login they ran as on {self.database} "
                        f"({_shown(self.defaults)} -> {_shown(now)}); Consort put them back",
                    )
                )
            if not self._opens():
                _reset_password(conn, self.role, self.backend.password(self.role))
                if not self._opens():
                    raise ConsortError(
                        f"{self.role} does not log in to {self.database} after its migrations, "
                        "even with its password set again"
                    )
                found.append(
                    SealViolation(
                        SealRule.MIGRATION_LOGIN,
                        "",
                        f"the migrations changed the password of {self.role}, the login they "
                        f"ran as on {self.database}: a password they chose would let anything "
                        "that knows it log in there; Consort set its own again",
                    )
                )
        return found

    def _opens(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S) as conn:
                conn.execute("SELECT 1")
        except psycopg.OperationalError:
            return False
        return True


def _defaults(conn: psycopg.Connection[Any], role: str) -> Defaults:
    return {str(db): tuple(config or ()) for db, config in conn.execute(DEFAULTS, (role,))}


def _shown(defaults: Defaults) -> str:
    entries = [
        f"{entry} in {db}" if db else entry for db, config in defaults.items() for entry in config
    ]
    return ", ".join(entries) or "none"


def _restore_defaults(
    conn: psycopg.Connection[Any], role: str, before: Defaults, now: Defaults
) -> None:
    """Reset every default the migration added or changed, and set a changed one back to its
    value before (as one literal: a list-valued setting a person had given the login, such as a
    `search_path` of several schemas, comes back as a single element). Defaults it left alone
    are not touched."""
    from psycopg import sql

    def scope(db: str) -> sql.Composable:
        target = sql.SQL("ALTER ROLE {}").format(sql.Identifier(role))
        return target if not db else sql.SQL("{} IN DATABASE {}").format(target, sql.Identifier(db))

    for db in sorted(before.keys() | now.keys()):
        had = dict(entry.partition("=")[::2] for entry in before.get(db, ()))
        has = dict(entry.partition("=")[::2] for entry in now.get(db, ()))
        for name in sorted(has.keys() | had.keys()):
            if had.get(name) == has.get(name):
                continue
            if name in had:
                value = sql.Literal(had[name])
                conn.execute(
                    sql.SQL("{} SET {} TO {}").format(scope(db), sql.Identifier(name), value)
                )
            else:
                conn.execute(sql.SQL("{} RESET {}").format(scope(db), sql.Identifier(name)))


def _reset_password(conn: psycopg.Connection[Any], role: str, password: str) -> None:
    from psycopg import sql

    from consort.adapters.db.branching import SCRAM_ITERATIONS, SCRAM_ITERATIONS_SINCE

    statements = [
        sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(password))
    ]
    if conn.info.server_version >= SCRAM_ITERATIONS_SINCE:
        # as Consort made it: one statement, so that SET LOCAL holds for the ALTER ROLE
        statements.insert(0, sql.SQL("SET LOCAL scram_iterations = {}").format(SCRAM_ITERATIONS))
    conn.execute(sql.SQL("; ").join(statements))
