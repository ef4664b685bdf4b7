"""The database design: the physical schema the feature needs and the change each story makes.
Written by the DBA.

The design is self-contained: every foreign key points at a table declared here, so the whole
schema can be checked without a database.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, StrictBool, field_validator, model_validator

from consort.core.artifacts._base import (
    ArtifactModel,
    FeatureId,
    SqlName,
    StoryId,
    Text,
    duplicates,
    reject,
)


class Column(ArtifactModel):
    """One column of a table."""

    name: SqlName = Field(description="Column name: lower case, letters, digits, underscores.")
    type: Text = Field(
        description='The PostgreSQL type as written in DDL, e.g. "bigint", "text", '
        '"numeric(12,2)", "timestamptz".'
    )
    nullable: StrictBool = Field(
        default=False, description="True when the column may hold NULL (default false)."
    )
    default: Text | None = Field(
        default=None,
        description='The default as a SQL expression, e.g. "0" or "now()"; null for none.',
    )


class UniqueConstraint(ArtifactModel):
    """Columns whose combined values are unique across the table's rows."""

    name: SqlName = Field(description='Constraint name, e.g. "stock_records_sku_location_key".')
    columns: list[SqlName] = Field(min_length=1, description="The columns, in order.")


class FkAction(StrEnum):
    """What happens to referencing rows when the referenced row is deleted."""

    NO_ACTION = "no action"
    RESTRICT = "restrict"
    CASCADE = "cascade"
    SET_NULL = "set null"
    SET_DEFAULT = "set default"


class ForeignKey(ArtifactModel):
    """A reference from this table's columns to the primary key or a unique key of a table."""

    name: SqlName = Field(description='Constraint name, e.g. "stock_records_sku_id_fkey".')
    columns: list[SqlName] = Field(min_length=1, description="The referencing columns here.")
    references_table: SqlName = Field(description="The referenced table (declared in `tables`).")
    references_columns: list[SqlName] = Field(
        min_length=1,
        description="The referenced columns, matching `columns` one to one; they must be the "
        "referenced table's primary key or one of its unique constraints.",
    )
    on_delete: FkAction = Field(default=FkAction.NO_ACTION, description="The ON DELETE action.")


class CheckConstraint(ArtifactModel):
    """A CHECK constraint."""

    name: SqlName = Field(description='Constraint name, e.g. "stock_records_quantity_check".')
    expression: Text = Field(description='The SQL boolean expression, e.g. "quantity >= 0".')


class Index(ArtifactModel):
    """An index, for the queries the stories make."""

    name: SqlName = Field(description='Index name, e.g. "stock_records_location_id_idx".')
    columns: list[SqlName] = Field(min_length=1, description="The indexed columns, in order.")
    unique: StrictBool = Field(default=False, description="True for a unique index.")


# A seed row's value for one column, as JSON writes it.
SeedValue = str | int | float | bool | None


class Table(ArtifactModel):
    """One table: its columns and constraints."""

    name: SqlName = Field(description="Table name: lower case, letters, digits, underscores.")
    columns: list[Column] = Field(min_length=1, description="The columns, in order.")
    primary_key: list[SqlName] = Field(
        min_length=1, description="The primary key's columns (never nullable)."
    )
    unique: list[UniqueConstraint] = Field(default_factory=list, description="Unique constraints.")
    foreign_keys: list[ForeignKey] = Field(default_factory=list, description="Foreign keys.")
    checks: list[CheckConstraint] = Field(default_factory=list, description="CHECK constraints.")
    indexes: list[Index] = Field(default_factory=list, description="Indexes.")
    seed_rows: list[dict[SqlName, SeedValue]] = Field(
        default_factory=list,
        description="Rows the migrations themselves insert (lookup data such as the statuses "
        'an order can have), each as column -> value, e.g. {"code": "open"}. Leave it empty '
        "unless the feature needs such rows: Consort refuses a run whose migrations write a "
        "row into a table that does not declare it here.",
    )

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    def unique_keys(self) -> list[tuple[str, ...]]:
        """Column sets a foreign key may reference: the primary key and every unique key."""
        keys = [tuple(self.primary_key)]
        keys += [tuple(u.columns) for u in self.unique]
        keys += [tuple(i.columns) for i in self.indexes if i.unique]
        return keys

    @model_validator(mode="after")
    def _columns_exist(self) -> Table:
        names = [c.name for c in self.columns]
        problems = [f"column {n} is declared more than once" for n in duplicates(names)]
        uses: list[tuple[str, list[str]]] = [("primary key", self.primary_key)]
        uses += [(f"unique constraint {u.name}", u.columns) for u in self.unique]
        uses += [(f"foreign key {fk.name}", fk.columns) for fk in self.foreign_keys]
        uses += [(f"index {i.name}", i.columns) for i in self.indexes]
        uses += [(f"seed row {n + 1}", list(row)) for n, row in enumerate(self.seed_rows)]
        for what, columns in uses:
            problems += [f"{what} lists unknown column {c}" for c in columns if c not in names]
            problems += [f"{what} lists column {c} twice" for c in duplicates(columns)]
        for name in self.primary_key:
            column = self.column(name)
            if column is not None and column.nullable:
                problems.append(f"primary key column {name} cannot be nullable")
        for fk in self.foreign_keys:
            if fk.on_delete is FkAction.SET_NULL:
                problems += [
                    f"foreign key {fk.name} sets {c} to null on delete, but {c} is not nullable"
                    for c in fk.columns
                    if (column := self.column(c)) is not None and not column.nullable
                ]
        reject(problems)
        return self


class StoryChange(ArtifactModel):
    """The schema change one story makes (one entry per story that changes the schema)."""

    story: StoryId = Field(description='The story id, e.g. "S1".')
    description: Text = Field(description="What changes in the schema and why this story needs it.")
    tables: list[SqlName] = Field(
        min_length=1,
        description="The tables the migration creates or alters (declared in `tables`).",
    )
    migration: Text = Field(
        description='A summary of the migration, e.g. "create table stock_records with ...".'
    )


class DbDesign(ArtifactModel):
    """The physical schema of a feature and the per-story migration plan."""

    feature: FeatureId = Field(description='The feature id, e.g. "F1".')
    tables: list[Table] = Field(
        min_length=1, description="Every table the feature's code uses, as it should end up."
    )
    story_changes: list[StoryChange] = Field(
        default_factory=list, description="The schema change each story makes, in build order."
    )

    def table(self, name: str) -> Table | None:
        return next((t for t in self.tables if t.name == name), None)

    @field_validator("tables")
    @classmethod
    def _references_resolve(cls, tables: list[Table]) -> list[Table]:
        by_name = {t.name: t for t in tables}
        problems = [
            f"table {n} is declared more than once" for n in duplicates(t.name for t in tables)
        ]
        # Constraints and indexes share one name space per schema in PostgreSQL (indexes and
        # unique constraints are relations), so names must not repeat across tables either.
        object_names = [t.name for t in tables]
        for table in tables:
            object_names += [u.name for u in table.unique] + [i.name for i in table.indexes]
            object_names += [fk.name for fk in table.foreign_keys]
            object_names += [c.name for c in table.checks]
            for fk in table.foreign_keys:
                problems += _foreign_key_problems(table, fk, by_name)
        problems += [
            f"name {n} is used by more than one table, constraint or index"
            for n in duplicates(object_names)
        ]
        reject(problems)
        return tables

    @model_validator(mode="after")
    def _story_changes_name_declared_tables(self) -> DbDesign:
        declared = {t.name for t in self.tables}
        problems = [
            f"story_changes: story {s} has more than one entry"
            for s in duplicates(c.story for c in self.story_changes)
        ]
        for index, change in enumerate(self.story_changes):
            problems += [
                f"story_changes[{index}].tables: {name} is not a declared table"
                for name in change.tables
                if name not in declared
            ]
        reject(problems)
        return self


def _foreign_key_problems(table: Table, fk: ForeignKey, by_name: dict[str, Table]) -> list[str]:
    where = f"table {table.name}, foreign key {fk.name}"
    target = by_name.get(fk.references_table)
    if target is None:
        return [f"{where}: references undeclared table {fk.references_table}"]
    problems = [
        f"{where}: references unknown column {target.name}.{c}"
        for c in fk.references_columns
        if target.column(c) is None
    ]
    if len(fk.columns) != len(fk.references_columns):
        problems.append(
            f"{where}: {len(fk.columns)} column(s) reference {len(fk.references_columns)}"
        )
    elif not problems and tuple(fk.references_columns) not in target.unique_keys():
        problems.append(
            f"{where}: {target.name}({', '.join(fk.references_columns)}) is neither the primary "
            "key nor a unique key of that table"
        )
    return problems
