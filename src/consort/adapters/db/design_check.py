"""Does the migrated schema hold what the approved db-design declares?

At story acceptance (the merge run) and at deploy, the schema the migrations built on the run's
throwaway child must contain every declared table of the stories done, with its columns (type
and nullability), primary key, unique constraints, foreign keys, CHECK constraints and indexes.
A constraint is found by its declared name or, failing that, by its shape (the same columns, the
same expression), so a migration may name it differently; one that is missing fails the proof.
Extra tables and constraints are the migrations' own business.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from consort.adapters.db.schema_diff import Schema, Table
from consort.core.artifacts.db_design import DbDesign
from consort.core.artifacts.db_design import Table as DesignTable

SCHEMA = "public"
TYPE_ALIASES = {
    "int": "integer",
    "int4": "integer",
    "int8": "bigint",
    "int2": "smallint",
    "serial": "integer",
    "serial4": "integer",
    "bigserial": "bigint",
    "serial8": "bigint",
    "bool": "boolean",
    "float8": "double precision",
    "float4": "real",
    "decimal": "numeric",
    "timestamptz": "timestamp with time zone",
    "timestamp": "timestamp without time zone",
    "timetz": "time with time zone",
    "time": "time without time zone",
    "varchar": "character varying",
    "char": "character",
}


def declared_tables(design: DbDesign, stories_done: Collection[str] | None) -> list[DesignTable]:
    """The tables the stories done create or alter (all of them when `stories_done` is None)."""
    if stories_done is None or not design.story_changes:
        return list(design.tables)
    names = {t for c in design.story_changes if c.story in stories_done for t in c.tables}
    return [t for t in design.tables if t.name in names]


def schema_gaps(
    design: DbDesign, schema: Schema, stories_done: Collection[str] | None = None
) -> list[tuple[str, str]]:
    """(table, what is missing) for every declared thing the schema lacks."""
    gaps: list[tuple[str, str]] = []
    for declared in declared_tables(design, stories_done):
        table = schema.tables.get(f"{SCHEMA}.{declared.name}")
        if table is None:
            gaps.append((declared.name, f"table {declared.name} does not exist"))
            continue
        gaps += [(declared.name, gap) for gap in _table_gaps(declared, table)]
    return gaps


def _table_gaps(declared: DesignTable, table: Table) -> list[str]:
    return _column_gaps(declared, table) + _constraint_gaps(declared, table)


def _column_gaps(declared: DesignTable, table: Table) -> list[str]:
    gaps = []
    columns = {c.name: c for c in table.columns}
    for column in declared.columns:
        found = columns.get(column.name)
        if found is None:
            gaps.append(f"column {column.name} does not exist")
            continue
        if normal_type(found.type) != normal_type(column.type):
            gaps.append(f"column {column.name} is {found.type}, not {column.type}")
        if not column.nullable and not found.not_null:
            gaps.append(f"column {column.name} may be NULL; the design says NOT NULL")
    if tuple(declared.primary_key) != table.primary_key:
        gaps.append(
            f"the primary key is ({', '.join(table.primary_key)}), not "
            f"({', '.join(declared.primary_key)})"
        )
    return gaps


def _constraint_gaps(declared: DesignTable, table: Table) -> list[str]:
    gaps = []
    unique_names = {u.name for u in table.uniques}
    unique_shapes = {_columns_of(u.definition) for u in table.uniques}
    for unique in declared.unique:
        if unique.name not in unique_names and tuple(unique.columns) not in unique_shapes:
            gaps.append(f"unique constraint {unique.name} ({', '.join(unique.columns)}) is missing")
    check_names = {c.name for c in table.checks}
    check_shapes = {_expression(c.definition) for c in table.checks}
    for check in declared.checks:
        if check.name not in check_names and _expression(check.expression) not in check_shapes:
            gaps.append(f"CHECK {check.name} ({check.expression}) is missing")
    for fk in declared.foreign_keys:
        if not any(
            f.name == fk.name
            or (f.columns == tuple(fk.columns) and f.ref_table.endswith(f".{fk.references_table}"))
            for f in table.foreign_keys
        ):
            gaps.append(f"foreign key {fk.name} -> {fk.references_table} is missing")
    index_names = {i.name for i in table.indexes}
    index_shapes = {_columns_of(i.definition) for i in table.indexes}
    for index in declared.indexes:
        shape = tuple(index.columns)
        covered = index.unique and shape in unique_shapes
        if index.name not in index_names and shape not in index_shapes and not covered:
            gaps.append(f"index {index.name} ({', '.join(index.columns)}) is missing")
    return gaps


def normal_type(text: str) -> str:
    lowered = re.sub(r"\s+", " ", text.strip().lower())
    lowered = re.sub(r" generated (always|by default) as identity.*$", "", lowered)
    base, paren, rest = lowered.partition("(")
    base = TYPE_ALIASES.get(base.strip(), base.strip())
    return base + (paren + rest.replace(" ", "") if paren else "")


def _columns_of(definition: str) -> tuple[str, ...]:
    """The column list of "UNIQUE (a, b)" or "CREATE INDEX ... USING btree (a, b)"."""
    match = re.search(r"\(([^()]*)\)\s*$", definition.strip())
    if match is None:
        return ()
    return tuple(part.strip().strip('"') for part in match.group(1).split(","))


def _expression(text: str) -> str:
    """A CHECK expression, comparable: no CHECK keyword, parentheses, casts or spaces."""
    lowered = text.lower().removeprefix("check").strip()
    lowered = re.sub(r"::[a-z ]+", "", lowered)
    return re.sub(r"[()\s]", "", lowered)
