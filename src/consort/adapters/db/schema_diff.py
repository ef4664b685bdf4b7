"""The schema difference of two PostgreSQL databases, read from the system catalogs.

`read_schema` turns one database into a `Schema` record; `diff_schemas` compares two records
without a server; `diff_databases` does both for two databases of a backend.

What is compared: ordinary and partitioned tables of every non-system schema, with their columns
(type as `format_type` renders it, NOT NULL, default expression), primary key, unique, foreign
key and check constraints, and the indexes that do not back a primary key or unique constraint.
Not compared: views, sequences, functions, types, column order, identity/collation/storage
settings, comments and privileges.

Names of constraints and indexes are not compared: a unique or check constraint is identified by
its `pg_get_constraintdef` text, a foreign key by its columns, target and actions, and an index by
its `pg_get_indexdef` text with the index's own name cut out. PostgreSQL generates these names
(`stock_sku_key`, `stock_sku_idx1`, ...) from whatever else already exists, so two branches that
create the same index or constraint often end up with different names for it; comparing by
definition makes them equal. The price is that a mere rename is not reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum, auto
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import psycopg

    from consort.adapters.db.backend import Backend


# ---- the schema record ----------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # format_type(): "integer", "character varying(20)", "numeric(10,2)"
    not_null: bool = False
    default: str | None = None  # pg_get_expr() of the default, None without one

    def describe(self) -> str:
        text = self.type + (" NOT NULL" if self.not_null else "")
        return text if self.default is None else f"{text} DEFAULT {self.default}"


@dataclass(frozen=True)
class Constraint:
    """A unique or check constraint; `definition` is pg_get_constraintdef(), e.g. "UNIQUE (sku)"."""

    name: str
    definition: str

    @property
    def shape(self) -> str:
        return self.definition

    def describe(self) -> str:
        return f"CONSTRAINT {self.name} {self.definition}"


@dataclass(frozen=True)
class ForeignKey:
    name: str
    columns: tuple[str, ...]
    ref_table: str  # qualified, "schema.table"
    ref_columns: tuple[str, ...]
    on_delete: str = "NO ACTION"
    on_update: str = "NO ACTION"

    @property
    def shape(self) -> str:
        """The constraint as SQL without its name; NO ACTION is left out as PostgreSQL does."""
        text = (
            f"FOREIGN KEY ({', '.join(self.columns)}) "
            f"REFERENCES {self.ref_table}({', '.join(self.ref_columns)})"
        )
        if self.on_update != "NO ACTION":
            text += f" ON UPDATE {self.on_update}"
        if self.on_delete != "NO ACTION":
            text += f" ON DELETE {self.on_delete}"
        return text

    def describe(self) -> str:
        return f"CONSTRAINT {self.name} {self.shape}"


@dataclass(frozen=True)
class Index:
    """`definition` is pg_get_indexdef(): "CREATE INDEX stock_qty_idx ON public.stock USING ..."."""

    name: str
    definition: str

    @property
    def shape(self) -> str:
        """The definition without the index's name: "CREATE INDEX ON public.stock USING ..."."""
        # pg_get_indexdef always starts "CREATE [UNIQUE ]INDEX <name> ON", the name quoted with
        # doubled inner quotes when it needs quoting; work out that rendering's length to cut it.
        head, _, rest = self.definition.partition("INDEX ")
        quoted = rest.startswith('"')
        length = len(self.name) + (self.name.count('"') + 2 if quoted else 0)
        return f"{head}INDEX{rest[length:]}"

    def describe(self) -> str:
        return self.definition


@dataclass(frozen=True)
class Table:
    columns: tuple[Column, ...] = ()  # in the table's column order
    primary_key: tuple[str, ...] = ()  # its columns in key order; empty without one
    uniques: tuple[Constraint, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    checks: tuple[Constraint, ...] = ()
    indexes: tuple[Index, ...] = ()


@dataclass(frozen=True)
class Schema:
    tables: Mapping[str, Table] = field(default_factory=dict)  # keyed by "schema.table"


# ---- the difference -------------------------------------------------------------------------


class ChangeKind(StrEnum):
    # Declaration order is the order of changes within one table.
    TABLE_ADDED = auto()
    TABLE_DROPPED = auto()
    COLUMN_ADDED = auto()
    COLUMN_DROPPED = auto()
    COLUMN_TYPE = auto()
    COLUMN_NULLABILITY = auto()
    COLUMN_DEFAULT = auto()
    PRIMARY_KEY = auto()
    UNIQUE_ADDED = auto()
    UNIQUE_DROPPED = auto()
    FOREIGN_KEY_ADDED = auto()
    FOREIGN_KEY_DROPPED = auto()
    CHECK_ADDED = auto()
    CHECK_DROPPED = auto()
    INDEX_ADDED = auto()
    INDEX_DROPPED = auto()


_KIND_ORDER = {kind: position for position, kind in enumerate(ChangeKind)}


@dataclass(frozen=True)
class Change:
    """One difference; "added" means present in the other database and not in the base one."""

    kind: ChangeKind
    table: str
    detail: str

    def line(self) -> str:
        if self.kind.endswith("_added"):
            sign = "+"
        elif self.kind.endswith("_dropped"):
            sign = "-"
        else:
            sign = "~"
        if self.kind.startswith("table_"):
            return f"{sign} table {self.table}"
        if self.kind.startswith("column_"):
            return f"{sign} {self.table}.{self.detail}"  # the detail starts with the column name
        return f"{sign} {self.table}: {self.detail}"


@dataclass(frozen=True)
class SchemaDiff:
    """Changes from the base database to the other one, ordered by table, then kind, then detail."""

    changes: list[Change]

    @property
    def is_empty(self) -> bool:
        return not self.changes

    def lines(self) -> list[str]:
        return [change.line() for change in self.changes]

    def as_json(self) -> dict[str, Any]:
        return {
            "changes": [
                {"kind": str(c.kind), "table": c.table, "detail": c.detail} for c in self.changes
            ]
        }


def diff_schemas(base: Schema, other: Schema) -> SchemaDiff:
    """Changes that turn `base` into `other`; an added or dropped table is one change in all."""
    changes: list[Change] = []
    for name in base.tables.keys() - other.tables.keys():
        changes.append(Change(ChangeKind.TABLE_DROPPED, name, ""))
    for name in other.tables.keys() - base.tables.keys():
        changes.append(Change(ChangeKind.TABLE_ADDED, name, ""))
    for name in base.tables.keys() & other.tables.keys():
        changes.extend(_diff_table(name, base.tables[name], other.tables[name]))
    changes.sort(key=lambda c: (c.table, _KIND_ORDER[c.kind], c.detail))
    return SchemaDiff(changes)


def _diff_table(name: str, base: Table, other: Table) -> Iterator[Change]:
    yield from _diff_columns(name, base.columns, other.columns)
    if base.primary_key != other.primary_key:
        detail = f"primary key {_key(base.primary_key)} -> {_key(other.primary_key)}"
        yield Change(ChangeKind.PRIMARY_KEY, name, detail)
    yield from _diff_shapes(
        name, base.uniques, other.uniques, ChangeKind.UNIQUE_ADDED, ChangeKind.UNIQUE_DROPPED
    )
    yield from _diff_shapes(
        name,
        base.foreign_keys,
        other.foreign_keys,
        ChangeKind.FOREIGN_KEY_ADDED,
        ChangeKind.FOREIGN_KEY_DROPPED,
    )
    yield from _diff_shapes(
        name, base.checks, other.checks, ChangeKind.CHECK_ADDED, ChangeKind.CHECK_DROPPED
    )
    yield from _diff_shapes(
        name, base.indexes, other.indexes, ChangeKind.INDEX_ADDED, ChangeKind.INDEX_DROPPED
    )


def _diff_columns(table: str, base: Iterable[Column], other: Iterable[Column]) -> Iterator[Change]:
    old = {column.name: column for column in base}
    new = {column.name: column for column in other}
    for name in new.keys() - old.keys():
        yield Change(ChangeKind.COLUMN_ADDED, table, f"{name}: {new[name].describe()}")
    for name in old.keys() - new.keys():
        yield Change(ChangeKind.COLUMN_DROPPED, table, f"{name}: {old[name].describe()}")
    for name in old.keys() & new.keys():
        a, b = old[name], new[name]
        if a.type != b.type:
            yield Change(ChangeKind.COLUMN_TYPE, table, f"{name}: type {a.type} -> {b.type}")
        if a.not_null != b.not_null:
            detail = f"{name}: {_nullability(a)} -> {_nullability(b)}"
            yield Change(ChangeKind.COLUMN_NULLABILITY, table, detail)
        if a.default != b.default:
            detail = f"{name}: default {a.default or '(none)'} -> {b.default or '(none)'}"
            yield Change(ChangeKind.COLUMN_DEFAULT, table, detail)


def _nullability(column: Column) -> str:
    return "not null" if column.not_null else "nullable"


def _key(columns: tuple[str, ...]) -> str:
    return f"({', '.join(columns)})" if columns else "(none)"


class _Shaped(Protocol):
    @property
    def shape(self) -> str: ...

    def describe(self) -> str: ...


def _diff_shapes(
    table: str,
    base: Iterable[_Shaped],
    other: Iterable[_Shaped],
    added: ChangeKind,
    dropped: ChangeKind,
) -> Iterator[Change]:
    """Constraints or indexes matched by their name-free shape (see the module docstring)."""
    old = {item.shape: item for item in base}
    new = {item.shape: item for item in other}
    for shape in new.keys() - old.keys():
        yield Change(added, table, new[shape].describe())
    for shape in old.keys() - new.keys():
        yield Change(dropped, table, old[shape].describe())


# ---- reading the catalogs -------------------------------------------------------------------

# Ordinary ('r') and partitioned ('p') tables outside the system schemas. pg_temp_* (and their
# pg_toast_temp_*) hold other sessions' temporary tables, which belong to no one's schema.
_TABLES = """
WITH t AS (
    SELECT c.oid, n.nspname || '.' || c.relname AS qualified
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p')
      AND n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname !~ '^pg_(toast|temp_)'
)
"""

_TABLE_NAMES = _TABLES + "SELECT qualified FROM t ORDER BY qualified"

_COLUMNS = (
    _TABLES
    + """
SELECT t.qualified, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid)
FROM t
JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
ORDER BY t.qualified, a.attnum
"""
)

# Key columns come back as names in key order (conkey/confkey are attnum arrays).
_CONSTRAINTS = (
    _TABLES
    + """
SELECT t.qualified, k.conname, k.contype, pg_get_constraintdef(k.oid),
       ARRAY(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY AS u(attnum, i)
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum
             ORDER BY u.i),
       rn.nspname || '.' || r.relname,
       ARRAY(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY AS u(attnum, i)
             JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum
             ORDER BY u.i),
       k.confdeltype, k.confupdtype
FROM t
JOIN pg_constraint k ON k.conrelid = t.oid AND k.contype IN ('p', 'u', 'f', 'c')
LEFT JOIN pg_class r ON r.oid = k.confrelid
LEFT JOIN pg_namespace rn ON rn.oid = r.relnamespace
ORDER BY t.qualified, k.conname
"""
)

# Indexes behind a primary key or unique constraint are already compared as that constraint.
_INDEXES = (
    _TABLES
    + """
SELECT t.qualified, ic.relname, pg_get_indexdef(i.indexrelid)
FROM t
JOIN pg_index i ON i.indrelid = t.oid
JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE NOT EXISTS (
    SELECT 1 FROM pg_constraint k
    WHERE k.conindid = i.indexrelid AND k.conrelid = i.indrelid AND k.contype IN ('p', 'u')
)
ORDER BY t.qualified, ic.relname
"""
)

_FK_ACTIONS = {
    "a": "NO ACTION",
    "r": "RESTRICT",
    "c": "CASCADE",
    "n": "SET NULL",
    "d": "SET DEFAULT",
}


def read_schema(conn: psycopg.Connection[Any]) -> Schema:
    """Introspect the database `conn` is connected to."""
    from psycopg.pq import TransactionStatus

    fresh = conn.info.transaction_status == TransactionStatus.IDLE
    with conn.transaction():
        if fresh:
            # Our own transaction (inside a caller's one, both settings are left alone):
            # one snapshot for every query, so a concurrent migration cannot show half-applied;
            # and a search_path of only pg_catalog, so format_type, pg_get_expr, ... qualify
            # every non-builtin name alike whatever search_path each database sets.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            conn.execute("SET LOCAL search_path = pg_catalog")
        names = [row[0] for row in conn.execute(_TABLE_NAMES)]
        columns: dict[str, list[Column]] = {name: [] for name in names}
        for table, name, type_, not_null, default in conn.execute(_COLUMNS):
            columns[table].append(Column(name, type_, not_null, default))
        keys: dict[str, tuple[str, ...]] = {}
        uniques: dict[str, list[Constraint]] = {name: [] for name in names}
        checks: dict[str, list[Constraint]] = {name: [] for name in names}
        foreign_keys: dict[str, list[ForeignKey]] = {name: [] for name in names}
        for row in conn.execute(_CONSTRAINTS):
            table, name, kind, definition, cols, ref_table, ref_cols, on_delete, on_update = row
            if kind == "p":
                keys[table] = tuple(cols)
            elif kind == "u":
                uniques[table].append(Constraint(name, definition))
            elif kind == "c":
                checks[table].append(Constraint(name, definition))
            else:
                fk = ForeignKey(
                    name,
                    tuple(cols),
                    ref_table,
                    tuple(ref_cols),
                    _FK_ACTIONS[on_delete],
                    _FK_ACTIONS[on_update],
                )
                foreign_keys[table].append(fk)
        indexes: dict[str, list[Index]] = {name: [] for name in names}
        for table, name, definition in conn.execute(_INDEXES):
            indexes[table].append(Index(name, definition))
    return Schema(
        {
            name: Table(
                columns=tuple(columns[name]),
                primary_key=keys.get(name, ()),
                uniques=tuple(uniques[name]),
                foreign_keys=tuple(foreign_keys[name]),
                checks=tuple(checks[name]),
                indexes=tuple(indexes[name]),
            )
            for name in names
        }
    )


def diff_databases(backend: Backend, base_db: str, other_db: str) -> SchemaDiff:
    """Changes that turn database `base_db`'s schema into `other_db`'s."""
    with backend.admin(base_db) as conn:
        base = read_schema(conn)
    with backend.admin(other_db) as conn:
        other = read_schema(conn)
    return diff_schemas(base, other)
