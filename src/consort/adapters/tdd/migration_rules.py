"""The database a run tests is built by migrations as schema, not filled by them as data.

A migration that inserts the row a test expects (the test adds one item and counts one, the code
stores nothing) or that answers the test's query with SQL code (a view of constant rows named
like the table, a function returning the expected number, a trigger that fills in the value the
code should have written) makes a run green without the code doing its work. After the migrate
command of a candidate run, Consort reads back from the server what it left
(`adapters/db/migration_trace.py`) and refuses:

* `migration-rows`: a row written into any table other than a migration tool's own history, or
  more rows than the approved db-design declares for the table as `seed_rows`, or declared seed
  rows that are not there; large objects; a sequence moved on or made to start elsewhere than a
  fresh one does;
* `migration-code`: a function, procedure, trigger, rewrite rule or view the migrations created,
  a row policy or row security (rows the code wrote, hidden), a setting of the database or role
  (a value kept outside every table);
* `migration-default`: a column or domain DEFAULT, or a generated column, the migrations made or
  changed that the approved db-design does not declare for that column (the code leaves the
  column out; the database fills in what the test expects);
* `migration-rows` in a migration tool's history (`history_violations`): more rows than the
  tree has migrations (a row of its own beside the record of each migration), or an Alembic
  version that no migration of the tree declares as its revision;
* `migration-catalog` (`catalog_violations`): values the migrations keep in the catalog, where
  code reads them back by SQL no rule reads: a comment they put on an object (`COMMENT ON
  TABLE items IS '1'`), an enum label the approved db-design does not spell (a column's type,
  a CHECK, a default or a seed row that names it: `'open'`).

A person allows what a project really needs in consort.toml:
`[seal] allow = ["migration-rows:public.countries", "migration-code:public.*",
"migration-default:public.orders.number"]`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from consort.adapters.db.migration_trace import CatalogValues, DefaultState, SequenceState
from consort.adapters.smells.tamper import allowed
from consort.core.artifacts.db_design import DbDesign, SeedValue
from consort.core.layout import Layout
from consort.core.seal import SealRule, SealViolation

ROWS_CAPABILITY = SealRule.MIGRATION_ROWS.value
CODE_CAPABILITY = SealRule.MIGRATION_CODE.value
DEFAULT_CAPABILITY = SealRule.MIGRATION_DEFAULT.value
CATALOG_CAPABILITY = SealRule.MIGRATION_CATALOG.value
# Large objects live in the catalog: counted as rows of this table.
LARGE_OBJECTS_TABLE = "pg_catalog.pg_largeobject"
DEFAULT_SCHEMA = "public"

# The tables migration tools keep their own history in (Alembic, Flyway, Django, Rails and
# goose-style tools, Knex, Prisma, Diesel, Sequelize, node-pg-migrate, TypeORM, Kysely, sqlx,
# Atlas): their rows say which migrations ran, and no test reads them.
HISTORY_TABLES = frozenset(
    {
        "alembic_version",
        "flyway_schema_history",
        "schema_version",
        "django_migrations",
        "schema_migrations",
        "ar_internal_metadata",
        "goose_db_version",
        "knex_migrations",
        "knex_migrations_lock",
        "_prisma_migrations",
        "__diesel_schema_migrations",
        "SequelizeMeta",
        "pgmigrations",
        "migrations",
        "kysely_migration",
        "kysely_migration_lock",
        "_sqlx_migrations",
        "atlas_schema_revisions",
    }
)

Seeds = Mapping[str, Sequence[Mapping[str, SeedValue]]]  # "public.table" -> declared rows


def approved_db_designs(layout: Layout) -> Iterator[DbDesign]:
    """Every feature's db-design, in folder order; a design that does not load declares nothing."""
    from consort.core.artifacts.registry import ArtifactKind, default_filename, load_artifact

    if not layout.features.is_dir():
        return
    for path in sorted(layout.features.glob(f"*/{default_filename(ArtifactKind.DB_DESIGN)}")):
        try:
            design = load_artifact(ArtifactKind.DB_DESIGN, path)
        except Exception:  # noqa: S112 -- a design that does not load declares nothing
            continue
        yield design


def declared_seeds(layout: Layout) -> dict[str, list[dict[str, SeedValue]]]:
    """Every seed row the approved db-designs of the project's features declare, by table."""
    seeds: dict[str, list[dict[str, SeedValue]]] = {}
    for design in approved_db_designs(layout):
        for table in design.tables:
            if table.seed_rows:
                rows = seeds.setdefault(f"{DEFAULT_SCHEMA}.{table.name}", [])
                rows += [dict(row) for row in table.seed_rows if dict(row) not in rows]
    return seeds


def row_violations(
    writes: Mapping[str, int],
    seeds: Seeds,
    allow: Sequence[str],
    missing_seeds: Mapping[str, Collection[Mapping[str, Any]]] | None = None,
) -> list[SealViolation]:
    """`writes`: "schema.table" -> rows the migrate command wrote there; `missing_seeds`: the
    declared seed rows of written tables that the table does not hold."""
    found = []
    for table, count in sorted(writes.items()):
        name = table.rpartition(".")[2]
        if name in HISTORY_TABLES or allowed(ROWS_CAPABILITY, table, allow):
            continue
        declared = len(seeds.get(table, ()))
        if count > declared:
            what = f"declares {declared} seed row(s)" if declared else "declares no seed rows"
            found.append(
                SealViolation(
                    SealRule.MIGRATION_ROWS,
                    table,
                    f"the migrations wrote {count} row(s) into {table}, whose approved db-design "
                    f"{what}: a migration builds the schema, the code under test writes the "
                    "data its tests read (rows a feature needs from the start are declared as "
                    "seed_rows in the db-design; a person can allow the table in consort.toml: "
                    f'seal.allow = ["{ROWS_CAPABILITY}:{table}"])',
                )
            )
    for table, rows in sorted((missing_seeds or {}).items()):
        found += [
            SealViolation(
                SealRule.MIGRATION_ROWS,
                table,
                f"the declared seed row {dict(row)} is not in {table} after the migrations: "
                "the rows they wrote are not the ones the approved db-design declares",
            )
            for row in rows
        ]
    return found


def sequence_violations(
    before: Mapping[str, SequenceState],
    after: Mapping[str, SequenceState],
    writes: Mapping[str, int],
    seeds: Seeds,
    allow: Sequence[str],
) -> list[SealViolation]:
    """Sequences whose next value the migrations chose, beyond what the rows they may write
    explain: one moved on (`setval`, `RESTART WITH`), or one they made that does not start
    where a fresh sequence does (`START 42`, an identity's `START WITH`). A sequence of a table
    that holds declared seed rows (or a migration tool's history) moves with them; any other
    one hands the code's next row the id a test expects, or is a counter the code reads."""
    found = []
    for name, state in sorted(after.items()):
        previous = before.get(name)
        expected = previous.next_value if previous is not None else state.fresh
        if state.next_value == expected:
            continue
        owner = state.table or ""
        explained = owner.rpartition(".")[2] in HISTORY_TABLES or (
            owner in seeds and writes.get(owner, 0) > 0
        )
        if (
            explained
            or allowed(ROWS_CAPABILITY, name, allow)
            or allowed(ROWS_CAPABILITY, owner, allow)
        ):
            continue
        how = "moved the sequence" if previous is not None else "made the sequence"
        found.append(
            SealViolation(
                SealRule.MIGRATION_ROWS,
                name,
                f"the migrations {how} {name} give {state.next_value} next (a fresh one gives "
                f"{expected}): the next row the code writes would get an id the migration "
                f"chose; a person can allow it in consort.toml: "
                f'seal.allow = ["{ROWS_CAPABILITY}:{name}"]',
            )
        )
    return found


def declared_defaults(layout: Layout) -> dict[str, str]:
    """`public.table.column` -> the default the approved db-designs declare for it."""
    found: dict[str, str] = {}
    for design in approved_db_designs(layout):
        for table in design.tables:
            for column in table.columns:
                if column.default is not None:
                    found[f"{DEFAULT_SCHEMA}.{table.name}.{column.name}"] = column.default
    return found


_CAST = re.compile(r"::\s*\"?[a-z_][a-z0-9_ ]*\"?(\(\s*\d+(\s*,\s*\d+)?\s*\))?(\[\])*")
_SAME_CLOCK = {"current_timestamp": "now()", "transaction_timestamp()": "now()"}


def same_default(declared: str, shown: str) -> bool:
    """Whether the server's expression is the declared one, read loosely: casts, case, spaces
    and outer parentheses aside (`'open'::text` is `'open'`, `CURRENT_TIMESTAMP` is `now()`)."""
    return _plain(declared) == _plain(shown)


def _plain(expression: str) -> str:
    text = _CAST.sub("", expression.strip().lower())
    text = re.sub(r"\s+", "", text)
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return _SAME_CLOCK.get(text, text)


def default_violations(
    before: Mapping[str, DefaultState],
    after: Mapping[str, DefaultState],
    declared: Mapping[str, str],
    allow: Sequence[str],
) -> list[SealViolation]:
    """Defaults the migrations made or changed that the approved db-design does not declare:
    a column left out by the code gets the value a test expects from its DEFAULT (or a domain's,
    or a generated column's expression). A sequence's `nextval` is an id, and is the sequence
    rule's to judge."""
    found = []
    for name, state in sorted(after.items()):
        if before.get(name) == state or state.expression.startswith("nextval("):
            continue
        if allowed(DEFAULT_CAPABILITY, name, allow):
            continue
        wanted = declared.get(name)
        if wanted is not None and not state.generated and same_default(wanted, state.expression):
            continue
        what = "generated column" if state.generated else "default"
        design = f"declares {wanted!r}" if wanted is not None else "declares none"
        found.append(
            SealViolation(
                SealRule.MIGRATION_DEFAULT,
                name,
                f"the migrations gave {name} the {what} {state.expression!r}, and the approved "
                f"db-design {design}: a value the database fills in is the design's to choose, "
                "not the migration's (declare it as the column's default in the db-design, or a "
                "person allows it in consort.toml: "
                f'seal.allow = ["{DEFAULT_CAPABILITY}:{name}"])',
            )
        )
    return found


def code_violations(
    created: Collection[tuple[str, str]], allow: Sequence[str]
) -> list[SealViolation]:
    """`created`: (kind, qualified name) of the SQL code objects the migrations made."""
    return [
        SealViolation(
            SealRule.MIGRATION_CODE,
            name,
            f"the migrations created the {kind} {name}: SQL code in the database can answer a "
            "test's query with what it computes instead of what the code under test stored "
            "(a view or function returning the expected rows, a trigger filling in values); "
            "write it in the application, or a person allows it in consort.toml: "
            f'seal.allow = ["{CODE_CAPABILITY}:{name}"]',
        )
        for kind, name in sorted(created)
        if not allowed(CODE_CAPABILITY, name, allow)
    ]


def missing_seed_rows(
    conn: Any, writes: Mapping[str, int], seeds: Seeds
) -> dict[str, list[Mapping[str, SeedValue]]]:
    """The declared seed rows, of the tables the migrations wrote to, that are not there."""
    from psycopg import sql

    missing: dict[str, list[Mapping[str, SeedValue]]] = {}
    for table, rows in seeds.items():
        if table not in writes:
            continue
        schema, _, name = table.partition(".")
        for row in rows:
            where = sql.SQL(" AND ").join(
                sql.SQL("{} IS NOT DISTINCT FROM {}").format(sql.Identifier(c), sql.Literal(v))
                for c, v in row.items()
            )
            query = sql.SQL("SELECT EXISTS (SELECT 1 FROM {}.{} WHERE {})").format(
                sql.Identifier(schema), sql.Identifier(name), where
            )
            try:
                present = conn.execute(query).fetchone()[0]
            except Exception:  # a declared column that is not there: the row is not either
                present = False
            if not present:
                missing.setdefault(table, []).append(row)
    return missing


# History tables that hold a lock or the tool's settings, not a row per migration.
HISTORY_STATE_TABLES = frozenset(
    {"knex_migrations_lock", "kysely_migration_lock", "ar_internal_metadata"}
)
HISTORY_STATE_ROWS = 2
# Rows a tool writes of its own beside each migration's: Flyway's where it made the schemas it
# migrates, goose's version 0, Atlas's revision metadata.
HISTORY_MARKER_ROWS = {
    "flyway_schema_history": 1,
    "goose_db_version": 1,
    "atlas_schema_revisions": 1,
}
# Histories that also record migrations of installed packages (Django's contrib apps), whose
# files are not in the tree: their rows are not counted against the tree's.
SHARED_HISTORIES = frozenset({"django_migrations"})
_REVISION = re.compile(r"""^revision\s*(?::[^=\n]+)?=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def alembic_revisions(sources: Mapping[str, str]) -> set[str]:
    """The revision ids the tree's Alembic migrations declare (`revision = "ab12"`);
    `sources`: path -> text of its migration files."""
    return {
        found
        for path, text in sources.items()
        if path.endswith(".py")
        for found in _REVISION.findall(text)
    }


def history_violations(
    history: Mapping[str, Sequence[Sequence[Any]]],
    migrations: int,
    revisions: Collection[str],
    allow: Sequence[str],
) -> list[SealViolation]:
    """`history`: "schema.table" -> the rows of each migration tool's history table the
    migrations wrote; `migrations`: how many migration files the tree has (0: none found where
    migrations are looked for, and nothing to count against); `revisions`: the Alembic
    revisions the tree declares."""
    found = []
    for table, rows in sorted(history.items()):
        name = table.rpartition(".")[2]
        if allowed(ROWS_CAPABILITY, table, allow):
            continue
        if name == "alembic_version" and revisions:
            strangers = sorted({str(row[0]) for row in rows if row and row[0] not in revisions})
            limit = len(revisions)
            if strangers:
                found.append(
                    _history_violation(
                        table,
                        f"holds the versions {strangers}, which no migration of the tree declares",
                    )
                )
                continue
        elif name in HISTORY_STATE_TABLES:
            limit = HISTORY_STATE_ROWS
        elif migrations and name not in SHARED_HISTORIES:
            limit = migrations + HISTORY_MARKER_ROWS.get(name, 0)
        else:
            continue
        if len(rows) > limit:
            found.append(
                _history_violation(
                    table, f"holds {len(rows)} rows, and the tree has {limit} migration(s)"
                )
            )
    return found


def _history_violation(table: str, what: str) -> SealViolation:
    return SealViolation(
        SealRule.MIGRATION_ROWS,
        table,
        f"the migration history {table} {what}: a history table records which migrations ran, "
        "and a row beyond that record is data no rule counts (a person can allow the table in "
        f'consort.toml: seal.allow = ["{ROWS_CAPABILITY}:{table}"])',
    )


_QUOTED = re.compile(r"'((?:[^']|'')*)'")


def declared_values(layout: Layout) -> set[str]:
    """Every value the approved db-designs spell: each quoted literal in their SQL (a CHECK's
    `status IN ('open', 'closed')`, a type's `enum('a', 'b')`, a default's `'open'`) and each
    text value of a seed row."""
    found: set[str] = set()
    for design in approved_db_designs(layout):
        for text in _strings(design.model_dump(mode="json")):
            found |= {inner.replace("''", "'") for inner in _QUOTED.findall(text)}
        for table in design.tables:
            found |= {v for row in table.seed_rows for v in row.values() if isinstance(v, str)}
    return found


def _strings(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return {s for item in value.values() for s in _strings(item)}
    if isinstance(value, list):
        return {s for item in value for s in _strings(item)}
    return set()


def catalog_violations(
    before: CatalogValues,
    after: CatalogValues,
    declared: Collection[str],
    allow: Sequence[str],
) -> list[SealViolation]:
    """Comments the migrations made or changed, and enum labels they made that `declared` (the
    approved db-designs' values) does not hold."""
    found = []
    for what, text in sorted(after.comments.items()):
        if before.comments.get(what) == text or allowed(CATALOG_CAPABILITY, what, allow):
            continue
        found.append(
            SealViolation(
                SealRule.MIGRATION_CATALOG,
                what,
                f"the migrations put the comment {text[:60]!r} on {what}: a comment is kept in "
                "the catalog, where code can read an answer back that no row rule counts; "
                "document the schema in the db-design, or a person allows it in consort.toml: "
                f'seal.allow = ["{CATALOG_CAPABILITY}:{what}"]',
            )
        )
    for name, labels in sorted(after.enums.items()):
        added = [label for label in labels if label not in set(before.enums.get(name, ()))]
        strangers = [label for label in added if label not in declared]
        if not strangers or allowed(CATALOG_CAPABILITY, name, allow):
            continue
        found.append(
            SealViolation(
                SealRule.MIGRATION_CATALOG,
                name,
                f"the migrations gave the enum {name} the labels {strangers}, which the approved "
                "db-design does not spell: an enum's labels are values kept in the catalog (a "
                "column's type or a CHECK in the design names them, e.g. \"status IN ('open', "
                "'closed')\"), or a person allows it in consort.toml: "
                f'seal.allow = ["{CATALOG_CAPABILITY}:{name}"]',
            )
        )
    return found
