"""What a run's migrations left in its throwaway child besides schema: rows and SQL code.

A migration is code in SQL that no rule of the seal reads. Whatever it does is read back from
the server instead, on the child the migrate command just ran against:

* rows written (`table_writes`): the server's own counters (`pg_stat_user_tables`: tuples
  inserted, updated, deleted) of a database created moments before, so every write the migrate
  command made is there, however it was made (INSERT, COPY, a DO block, a function, a trigger
  that fired, CREATE TABLE AS, a materialised view);
* sequences moved on or made to start elsewhere (`sequence_values`, read before and after):
  the id the code's next row gets, or a counter the code reads, chosen by the migration;
* SQL code (`code_objects`): functions and procedures, triggers, rewrite rules and views, which
  answer a query with what they compute instead of what the code under test stored; row
  policies and row security, which hide rows the code wrote; settings of the child's database
  or role (`ALTER ROLE CURRENT_USER SET application_name = '42'`), which hold a value outside any
  table. Objects an extension brought are the extension's, not the migration's;
* defaults (`column_defaults`): a column's or a domain's DEFAULT, and generated columns, which
  fill in the value a test expects where the code wrote none;
* large objects (`large_objects`): data kept in the catalog, beside every user table;
* the rows of a migration tool's history table (`history_rows`), where a row beyond the
  migrations' own record holds a value no row rule counts;
* values kept in the catalog (`catalog_values`): comments on objects and enum labels, where an
  answer a test expects can wait for code that reads it back.

A backend reports its counters as it ends, so they are read once no backend is connected to the
child any more.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import psycopg

    from consort.adapters.db.backend import Backend

SETTLE_S = 5.0
SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")

# Every user table the migrate command wrote to, with the tuples it inserted, updated, deleted.
WRITES = """
SELECT schemaname, relname, n_tup_ins, n_tup_upd, n_tup_del
FROM pg_stat_user_tables
WHERE n_tup_ins + n_tup_upd + n_tup_del > 0
ORDER BY schemaname, relname
"""

# Objects of an extension are recorded in pg_depend with deptype 'e'.
_NOT_EXTENSION = """
NOT EXISTS (SELECT 1 FROM pg_depend d
            WHERE d.classid = '{catalog}'::regclass AND d.objid = {oid} AND d.deptype = 'e')
"""
CODE = f"""
SELECT 'function', n.nspname || '.' || p.proname || '(' ||
       pg_get_function_identity_arguments(p.oid) || ')'
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname NOT IN {SYSTEM_SCHEMAS!r} AND n.nspname NOT LIKE 'pg_temp%'
  AND {_NOT_EXTENSION.format(catalog="pg_proc", oid="p.oid")}
UNION ALL
SELECT 'trigger', c.relnamespace::regnamespace || '.' || c.relname || '.' || t.tgname
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE NOT t.tgisinternal AND c.relnamespace::regnamespace::text NOT IN {SYSTEM_SCHEMAS!r}
UNION ALL
SELECT 'rule', c.relnamespace::regnamespace || '.' || c.relname || '.' || r.rulename
FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class
WHERE r.rulename <> '_RETURN' AND c.relnamespace::regnamespace::text NOT IN {SYSTEM_SCHEMAS!r}
UNION ALL
SELECT 'row policy', c.relnamespace::regnamespace || '.' || c.relname || '.' || p.polname
FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
WHERE c.relnamespace::regnamespace::text NOT IN {SYSTEM_SCHEMAS!r}
UNION ALL
SELECT 'row security', c.relnamespace::regnamespace || '.' || c.relname
FROM pg_class c
WHERE (c.relrowsecurity OR c.relforcerowsecurity)
  AND c.relnamespace::regnamespace::text NOT IN {SYSTEM_SCHEMAS!r}
UNION ALL
SELECT 'setting', CASE WHEN s.setdatabase = 0 THEN 'role' ELSE 'database' END || ' ' || setting
FROM pg_db_role_setting s, unnest(s.setconfig) AS setting
WHERE s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
  AND s.setrole IN (0, (SELECT nspowner FROM pg_namespace WHERE nspname = 'public'))
UNION ALL
SELECT CASE c.relkind WHEN 'm' THEN 'materialized view' ELSE 'view' END,
       c.relnamespace::regnamespace || '.' || c.relname
FROM pg_class c
WHERE c.relkind IN ('v', 'm') AND c.relnamespace::regnamespace::text NOT IN {SYSTEM_SCHEMAS!r}
  AND {_NOT_EXTENSION.format(catalog="pg_class", oid="c.oid")}
"""


# Every sequence with its step and the table that owns it, if any.
SEQUENCES = """
SELECT s.schemaname, s.sequencename, s.increment_by,
       (SELECT n.nspname || '.' || c.relname
        FROM pg_depend d
        JOIN pg_class c ON c.oid = d.refobjid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE d.classid = 'pg_class'::regclass
          AND d.objid = (quote_ident(s.schemaname) || '.' || quote_ident(s.sequencename))::regclass
          AND d.deptype IN ('a', 'i')
        LIMIT 1)
FROM pg_sequences s
WHERE s.schemaname NOT IN ('pg_catalog', 'information_schema')
"""

# Every column default and generated column, and every domain's default: values the schema
# fills in where the code wrote none.
DEFAULTS = f"""
SELECT n.nspname || '.' || c.relname || '.' || a.attname, pg_get_expr(d.adbin, d.adrelid),
       a.attgenerated <> ''
FROM pg_attrdef d
JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
JOIN pg_class c ON c.oid = d.adrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE NOT a.attisdropped AND n.nspname NOT IN {SYSTEM_SCHEMAS!r}
  AND {_NOT_EXTENSION.format(catalog="pg_class", oid="c.oid")}
UNION ALL
SELECT 'domain ' || n.nspname || '.' || t.typname, t.typdefault, false
FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE t.typtype = 'd' AND t.typdefault IS NOT NULL AND n.nspname NOT IN {SYSTEM_SCHEMAS!r}
  AND {_NOT_EXTENSION.format(catalog="pg_type", oid="t.oid")}
"""

# Large objects: data kept in the catalog, where no user table's counter sees it.
LARGE_OBJECTS = "SELECT count(*) FROM pg_largeobject_metadata"


# Comments on objects made after the server's own (the first normal object id is 16384) and
# not by an extension: every COMMENT ON a migration ran.
OWN_COMMENTS = """
FROM pg_catalog.pg_description d
WHERE d.objoid >= 16384
  AND d.classoid <> 'pg_catalog.pg_extension'::regclass
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e
                  WHERE e.classid = d.classoid AND e.objid = d.objoid AND e.deptype = 'e')
"""
HISTORY_ROWS_READ = 1000  # more than any real history; enough to count past the migrations
COMMENTS = "SELECT o.type || ' ' || o.identity, d.description " + OWN_COMMENTS.replace(
    "FROM pg_catalog.pg_description d",
    "FROM pg_catalog.pg_description d,\n"
    "     LATERAL pg_catalog.pg_identify_object(d.classoid, d.objoid, d.objsubid) o",
)
ENUMS = f"""
SELECT n.nspname || '.' || t.typname, array_agg(e.enumlabel::text ORDER BY e.enumsortorder)
FROM pg_enum e
JOIN pg_type t ON t.oid = e.enumtypid
JOIN pg_namespace n ON n.oid = t.typnamespace
WHERE n.nspname NOT IN {SYSTEM_SCHEMAS!r}
  AND {_NOT_EXTENSION.format(catalog="pg_type", oid="t.oid")}
GROUP BY 1
"""


class SequenceState(NamedTuple):
    """One sequence: the value its next `nextval` gives, its step, the table owning it."""

    next_value: int
    step: int
    table: str | None

    @property
    def fresh(self) -> int:
        """What a sequence made with no START gives first."""
        return 1 if self.step > 0 else -1


class DefaultState(NamedTuple):
    """A column's default (or generated) expression as the server shows it."""

    expression: str
    generated: bool


def settle(
    backend: Backend,
    database: str,
    *,
    settle_s: float = SETTLE_S,
    using: psycopg.Connection[Any] | None = None,
) -> None:
    """Wait until no backend is connected to `database` (or `settle_s` passed): each reports
    its statistics as it ends. Asked over `using` (an admin connection elsewhere, such as the
    one a throwaway child was built with) where given."""
    if using is None:
        with backend.admin() as conn:
            settle(backend, database, settle_s=settle_s, using=conn)
        return
    deadline = time.monotonic() + settle_s
    while True:
        busy = using.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchone()
        if not busy or not busy[0] or time.monotonic() > deadline:
            return
        time.sleep(0.02)


def table_writes(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """`schema.table` -> tuples written (inserted + updated + deleted), for every user table of
    the connected database that was written to since the database was created."""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    return {
        f"{schema}.{table}": int(ins) + int(upd) + int(dele)
        for schema, table, ins, upd, dele in conn.execute(WRITES).fetchall()
    }


def sequence_values(conn: psycopg.Connection[Any]) -> dict[str, SequenceState]:
    """`schema.sequence` -> what its next value is, its step and owning table. A migration that
    moved a sequence on (`setval('items_id_seq', 41)`, `RESTART WITH 42`) or made one that
    starts elsewhere than a fresh one (`START 42`, an identity column's `START WITH`) hands the
    code's next row the id a test expects, or a counter the code reads, without the code
    choosing it."""
    from psycopg import sql

    found = {}
    for schema, name, step, table in conn.execute(SEQUENCES).fetchall():
        row = conn.execute(
            sql.SQL("SELECT last_value, is_called FROM {}.{}").format(
                sql.Identifier(schema), sql.Identifier(name)
            )
        ).fetchone()
        if row is None:  # a sequence relation always has its one row
            continue
        last, called = row
        following = int(last) + int(step) if called else int(last)
        found[f"{schema}.{name}"] = SequenceState(
            following, int(step), None if table is None else str(table)
        )
    return found


def column_defaults(conn: psycopg.Connection[Any]) -> dict[str, DefaultState]:
    """`schema.table.column` (or `domain schema.name`) -> its default expression."""
    return {
        str(name): DefaultState(str(expression), bool(generated))
        for name, expression, generated in conn.execute(DEFAULTS).fetchall()
    }


def large_objects(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(LARGE_OBJECTS).fetchone()
    return int(row[0]) if row else 0


def code_objects(conn: psycopg.Connection[Any]) -> set[tuple[str, str]]:
    """Every function, procedure, trigger, rule and view of the connected database that no
    extension brought, as (kind, qualified name): ("view", "public.items"),
    ("trigger", "public.items.fill_qty"), ("function", "public.item_count()")."""
    return {(str(kind), str(name)) for kind, name in conn.execute(CODE).fetchall()}


def history_rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    """The rows of `table` ("schema.name"), a migration tool's history, as they stand."""
    from psycopg import sql

    schema, _, name = table.partition(".")
    query = sql.SQL("SELECT * FROM {}.{} LIMIT {}").format(
        sql.Identifier(schema), sql.Identifier(name), sql.Literal(HISTORY_ROWS_READ)
    )
    return [tuple(row) for row in conn.execute(query).fetchall()]


@dataclass(frozen=True)
class CatalogValues:
    """Values kept in the catalog: comments on objects no extension brought (object -> text:
    "table public.items" -> "..."), and every enum's labels (`schema.type` -> labels)."""

    comments: Mapping[str, str] = field(default_factory=dict)
    enums: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def catalog_values(conn: psycopg.Connection[Any]) -> CatalogValues:
    comments = {str(what): str(text) for what, text in conn.execute(COMMENTS).fetchall()}
    enums = {str(name): tuple(labels) for name, labels in conn.execute(ENUMS).fetchall()}
    return CatalogValues(comments, enums)
