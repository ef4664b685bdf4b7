"""diff_schemas on hand-built Schema records: no server needed."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from consort.adapters.db.schema_diff import (
    Change,
    ChangeKind,
    Column,
    Constraint,
    ForeignKey,
    Index,
    Schema,
    SchemaDiff,
    Table,
    diff_schemas,
)

ID = Column("id", "integer", not_null=True)
QTY = Column("qty", "integer", default="0")


STOCK = Table(
    columns=(ID, QTY),
    primary_key=("id",),
    uniques=(Constraint("stock_sku_key", "UNIQUE (sku)"),),
    foreign_keys=(ForeignKey("stock_item_fk", ("item_id",), "public.item", ("id",)),),
    checks=(Constraint("stock_qty_check", "CHECK ((qty >= 0))"),),
    indexes=(
        Index("stock_qty_idx", "CREATE INDEX stock_qty_idx ON public.stock USING btree (qty)"),
    ),
)


def stock(**changes: Any) -> Table:
    """public.stock as the base database has it, with some fields replaced."""
    return replace(STOCK, **changes)


def one_table_diff(base: Table, other: Table) -> list[Change]:
    return diff_schemas(Schema({"public.stock": base}), Schema({"public.stock": other})).changes


def test_equal_schemas_give_an_empty_diff() -> None:
    diff = diff_schemas(Schema({"public.stock": stock()}), Schema({"public.stock": stock()}))

    assert diff.is_empty
    assert diff.lines() == []
    assert diff.as_json() == {"changes": []}
    assert diff_schemas(Schema(), Schema()).is_empty


def test_tables_added_and_dropped() -> None:
    base = Schema({"public.stock": stock(), "public.legacy": Table()})
    other = Schema({"public.stock": stock(), "app.audit": Table(columns=(ID,))})

    diff = diff_schemas(base, other)

    assert diff.changes == [
        Change(ChangeKind.TABLE_ADDED, "app.audit", ""),
        Change(ChangeKind.TABLE_DROPPED, "public.legacy", ""),
    ]
    assert diff.lines() == ["+ table app.audit", "- table public.legacy"]
    assert not diff.is_empty


def test_a_dropped_table_is_one_change_not_one_per_column() -> None:
    diff = diff_schemas(Schema({"public.stock": stock()}), Schema())

    assert diff.changes == [Change(ChangeKind.TABLE_DROPPED, "public.stock", "")]


def test_columns_added_and_dropped() -> None:
    added = Column("added_at", "timestamp with time zone", not_null=True, default="now()")
    changes = one_table_diff(stock(), stock(columns=(ID, added)))

    assert changes == [
        Change(
            ChangeKind.COLUMN_ADDED,
            "public.stock",
            "added_at: timestamp with time zone NOT NULL DEFAULT now()",
        ),
        Change(ChangeKind.COLUMN_DROPPED, "public.stock", "qty: integer DEFAULT 0"),
    ]


@pytest.mark.parametrize(
    ("new_qty", "kind", "line"),
    [
        (
            Column("qty", "bigint", default="0"),
            ChangeKind.COLUMN_TYPE,
            "~ public.stock.qty: type integer -> bigint",
        ),
        (
            Column("qty", "integer", not_null=True, default="0"),
            ChangeKind.COLUMN_NULLABILITY,
            "~ public.stock.qty: nullable -> not null",
        ),
        (
            Column("qty", "integer", default="1"),
            ChangeKind.COLUMN_DEFAULT,
            "~ public.stock.qty: default 0 -> 1",
        ),
        (
            Column("qty", "integer"),
            ChangeKind.COLUMN_DEFAULT,
            "~ public.stock.qty: default 0 -> (none)",
        ),
    ],
)
def test_one_column_attribute_changed(new_qty: Column, kind: ChangeKind, line: str) -> None:
    diff = diff_schemas(
        Schema({"public.stock": stock()}), Schema({"public.stock": stock(columns=(ID, new_qty))})
    )

    assert [c.kind for c in diff.changes] == [kind]
    assert diff.lines() == [line]


def test_a_column_changed_in_every_way_gives_one_change_per_attribute_in_kind_order() -> None:
    changes = one_table_diff(
        stock(), stock(columns=(ID, Column("qty", "numeric(10,2)", not_null=True)))
    )

    assert changes == [
        Change(ChangeKind.COLUMN_TYPE, "public.stock", "qty: type integer -> numeric(10,2)"),
        Change(ChangeKind.COLUMN_NULLABILITY, "public.stock", "qty: nullable -> not null"),
        Change(ChangeKind.COLUMN_DEFAULT, "public.stock", "qty: default 0 -> (none)"),
    ]


def test_column_order_is_not_a_change() -> None:
    assert one_table_diff(stock(), stock(columns=(QTY, ID))) == []


@pytest.mark.parametrize(
    ("old_key", "new_key", "detail"),
    [
        (("id",), ("id", "sku"), "primary key (id) -> (id, sku)"),
        (("id", "sku"), ("sku", "id"), "primary key (id, sku) -> (sku, id)"),
        ((), ("id",), "primary key (none) -> (id)"),
        (("id",), (), "primary key (id) -> (none)"),
    ],
)
def test_primary_key_changed(
    old_key: tuple[str, ...], new_key: tuple[str, ...], detail: str
) -> None:
    changes = one_table_diff(stock(primary_key=old_key), stock(primary_key=new_key))

    assert changes == [Change(ChangeKind.PRIMARY_KEY, "public.stock", detail)]


def test_unique_constraints_added_and_dropped() -> None:
    new = Constraint("stock_item_id_sku_key", "UNIQUE (item_id, sku)")

    diff = diff_schemas(
        Schema({"public.stock": stock()}), Schema({"public.stock": stock(uniques=(new,))})
    )

    assert diff.lines() == [
        "+ public.stock: CONSTRAINT stock_item_id_sku_key UNIQUE (item_id, sku)",
        "- public.stock: CONSTRAINT stock_sku_key UNIQUE (sku)",
    ]
    assert [c.kind for c in diff.changes] == [ChangeKind.UNIQUE_ADDED, ChangeKind.UNIQUE_DROPPED]


def test_foreign_key_with_another_action_is_dropped_and_added() -> None:
    cascading = ForeignKey(
        "stock_item_fk", ("item_id",), "public.item", ("id",), on_delete="CASCADE"
    )

    changes = one_table_diff(stock(), stock(foreign_keys=(cascading,)))

    assert changes == [
        Change(
            ChangeKind.FOREIGN_KEY_ADDED,
            "public.stock",
            "CONSTRAINT stock_item_fk FOREIGN KEY (item_id) REFERENCES public.item(id) "
            "ON DELETE CASCADE",
        ),
        Change(
            ChangeKind.FOREIGN_KEY_DROPPED,
            "public.stock",
            "CONSTRAINT stock_item_fk FOREIGN KEY (item_id) REFERENCES public.item(id)",
        ),
    ]


@pytest.mark.parametrize(
    "changed",
    [
        ForeignKey("fk", ("item_id",), "public.item", ("id",), on_update="RESTRICT"),
        ForeignKey("fk", ("item_id",), "app.item", ("id",)),
        ForeignKey("fk", ("item_id",), "public.item", ("code",)),
        ForeignKey("fk", ("sku",), "public.item", ("id",)),
    ],
)
def test_every_part_of_a_foreign_key_is_compared(changed: ForeignKey) -> None:
    changes = one_table_diff(stock(), stock(foreign_keys=(changed,)))

    assert [c.kind for c in changes] == [
        ChangeKind.FOREIGN_KEY_ADDED,
        ChangeKind.FOREIGN_KEY_DROPPED,
    ]


def test_check_constraints_added_and_dropped() -> None:
    positive = Constraint("stock_qty_check", "CHECK ((qty > 0))")

    changes = one_table_diff(stock(), stock(checks=(positive,)))

    assert changes == [
        Change(
            ChangeKind.CHECK_ADDED, "public.stock", "CONSTRAINT stock_qty_check CHECK ((qty > 0))"
        ),
        Change(
            ChangeKind.CHECK_DROPPED,
            "public.stock",
            "CONSTRAINT stock_qty_check CHECK ((qty >= 0))",
        ),
    ]


def test_indexes_added_and_dropped() -> None:
    on_id = Index("stock_id_idx", "CREATE INDEX stock_id_idx ON public.stock USING btree (id)")

    diff = diff_schemas(
        Schema({"public.stock": stock()}), Schema({"public.stock": stock(indexes=(on_id,))})
    )

    assert diff.lines() == [
        "+ public.stock: CREATE INDEX stock_id_idx ON public.stock USING btree (id)",
        "- public.stock: CREATE INDEX stock_qty_idx ON public.stock USING btree (qty)",
    ]
    assert [c.kind for c in diff.changes] == [ChangeKind.INDEX_ADDED, ChangeKind.INDEX_DROPPED]


def test_constraints_and_indexes_are_compared_by_definition_not_name() -> None:
    renamed = stock(
        uniques=(Constraint("stock_sku_unique", "UNIQUE (sku)"),),
        foreign_keys=(ForeignKey("stock_item_id_fkey", ("item_id",), "public.item", ("id",)),),
        checks=(Constraint("qty_not_negative", "CHECK ((qty >= 0))"),),
        indexes=(Index("Qty Index", 'CREATE INDEX "Qty Index" ON public.stock USING btree (qty)'),),
    )

    assert one_table_diff(stock(), renamed) == []


@pytest.mark.parametrize(
    ("index", "shape"),
    [
        (
            Index("stock_qty_idx", "CREATE INDEX stock_qty_idx ON public.stock USING btree (qty)"),
            "CREATE INDEX ON public.stock USING btree (qty)",
        ),
        (
            Index("u", "CREATE UNIQUE INDEX u ON ONLY public.stock USING btree (qty)"),
            "CREATE UNIQUE INDEX ON ONLY public.stock USING btree (qty)",
        ),
        # A quoted name may itself contain " ON " and doubled quotes.
        (
            Index('a "b" ON c', 'CREATE INDEX "a ""b"" ON c" ON public.stock USING btree (qty)'),
            "CREATE INDEX ON public.stock USING btree (qty)",
        ),
    ],
)
def test_index_shape_cuts_out_exactly_the_name(index: Index, shape: str) -> None:
    assert index.shape == shape


def test_unique_index_differs_from_plain_index_on_the_same_column() -> None:
    unique = Index(
        "stock_qty_idx", "CREATE UNIQUE INDEX stock_qty_idx ON public.stock USING btree (qty)"
    )

    kinds = [c.kind for c in one_table_diff(stock(), stock(indexes=(unique,)))]

    assert kinds == [ChangeKind.INDEX_ADDED, ChangeKind.INDEX_DROPPED]


def test_every_kind_together_is_ordered_by_table_then_kind_and_serialises() -> None:
    base = Schema(
        {
            "public.stock": stock(),
            "public.legacy": Table(),
            "app.kept": Table(columns=(ID,)),
        }
    )
    other = Schema(
        {
            "public.stock": stock(
                columns=(
                    Column("id", "bigint", not_null=False, default="1"),
                    Column("note", "text"),
                ),
                primary_key=("id", "note"),
                uniques=(Constraint("stock_note_key", "UNIQUE (note)"),),
                foreign_keys=(ForeignKey("fk", ("note",), "app.kept", ("id",)),),
                checks=(Constraint("stock_note_check", "CHECK ((note <> ''::text))"),),
                indexes=(Index("i", "CREATE INDEX i ON public.stock USING btree (note)"),),
            ),
            "app.kept": Table(columns=(ID,)),
            "app.audit": Table(),
        }
    )

    diff = diff_schemas(base, other)

    assert [(c.table, c.kind) for c in diff.changes] == [
        ("app.audit", ChangeKind.TABLE_ADDED),
        ("public.legacy", ChangeKind.TABLE_DROPPED),
        ("public.stock", ChangeKind.COLUMN_ADDED),
        ("public.stock", ChangeKind.COLUMN_DROPPED),
        ("public.stock", ChangeKind.COLUMN_TYPE),
        ("public.stock", ChangeKind.COLUMN_NULLABILITY),
        ("public.stock", ChangeKind.COLUMN_DEFAULT),
        ("public.stock", ChangeKind.PRIMARY_KEY),
        ("public.stock", ChangeKind.UNIQUE_ADDED),
        ("public.stock", ChangeKind.UNIQUE_DROPPED),
        ("public.stock", ChangeKind.FOREIGN_KEY_ADDED),
        ("public.stock", ChangeKind.FOREIGN_KEY_DROPPED),
        ("public.stock", ChangeKind.CHECK_ADDED),
        ("public.stock", ChangeKind.CHECK_DROPPED),
        ("public.stock", ChangeKind.INDEX_ADDED),
        ("public.stock", ChangeKind.INDEX_DROPPED),
    ]
    assert {c.kind for c in diff.changes} == set(ChangeKind)
    assert diff.lines()[2:5] == [
        "+ public.stock.note: text",
        "- public.stock.qty: integer DEFAULT 0",
        "~ public.stock.id: type integer -> bigint",
    ]

    as_json = diff.as_json()
    assert json.loads(json.dumps(as_json)) == as_json
    assert as_json["changes"][0] == {"kind": "table_added", "table": "app.audit", "detail": ""}
    assert as_json["changes"][4] == {
        "kind": "column_type",
        "table": "public.stock",
        "detail": "id: type integer -> bigint",
    }
    assert len(as_json["changes"]) == len(diff.changes)


def test_order_does_not_depend_on_the_order_of_the_input() -> None:
    tables = {name: Table(columns=(ID,)) for name in ("b.t", "a.t", "c.t", "a.s")}
    reversed_tables = dict(reversed(list(tables.items())))

    forward = diff_schemas(Schema(), Schema(tables))
    backward = diff_schemas(Schema(), Schema(reversed_tables))

    assert (
        forward.lines()
        == backward.lines()
        == [
            "+ table a.s",
            "+ table a.t",
            "+ table b.t",
            "+ table c.t",
        ]
    )


def test_records_are_immutable() -> None:
    diff = SchemaDiff([])
    with pytest.raises(AttributeError):
        diff.changes = []  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ID.type = "bigint"  # type: ignore[misc]
