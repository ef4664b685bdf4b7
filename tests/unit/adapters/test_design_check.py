"""The migrated schema against the approved db-design: what is missing is found, by name or
by shape; types are compared as PostgreSQL spells them."""

from __future__ import annotations

from consort.adapters.db.design_check import normal_type, schema_gaps
from consort.adapters.db.schema_diff import Column, Constraint, ForeignKey, Index, Schema, Table
from consort.core.artifacts.db_design import DbDesign

DESIGN = DbDesign.model_validate(
    {
        "feature": "F1",
        "tables": [
            {
                "name": "skus",
                "columns": [
                    {"name": "id", "type": "bigint generated always as identity"},
                    {"name": "code", "type": "text"},
                ],
                "primary_key": ["id"],
                "unique": [{"name": "skus_code_key", "columns": ["code"]}],
            },
            {
                "name": "stock",
                "columns": [
                    {"name": "id", "type": "bigint"},
                    {"name": "sku_id", "type": "bigint"},
                    {"name": "quantity", "type": "int"},
                    {"name": "at", "type": "timestamptz", "nullable": True},
                ],
                "primary_key": ["id"],
                "checks": [{"name": "stock_quantity_check", "expression": "quantity >= 0"}],
                "foreign_keys": [
                    {
                        "name": "stock_sku_id_fkey",
                        "columns": ["sku_id"],
                        "references_table": "skus",
                        "references_columns": ["id"],
                    }
                ],
                "indexes": [{"name": "stock_sku_idx", "columns": ["sku_id"]}],
            },
        ],
        "story_changes": [
            {"story": "S1", "description": "d", "tables": ["skus"], "migration": "m"},
            {"story": "S2", "description": "d", "tables": ["stock"], "migration": "m"},
        ],
    }
)


def _schema(*, check: bool = True, named: bool = True) -> Schema:
    skus = Table(
        columns=(Column("id", "bigint", True), Column("code", "text", True)),
        primary_key=("id",),
        uniques=(Constraint("skus_code_key" if named else "u1", "UNIQUE (code)"),),
    )
    stock = Table(
        columns=(
            Column("id", "bigint", True),
            Column("sku_id", "bigint", True),
            Column("quantity", "integer", True),
            Column("at", "timestamp with time zone", False),
        ),
        primary_key=("id",),
        checks=(Constraint("c1", "CHECK ((quantity >= 0))"),) if check else (),
        foreign_keys=(ForeignKey("fk1", ("sku_id",), "public.skus", ("id",)),),
        indexes=(Index("i1", "CREATE INDEX i1 ON public.stock USING btree (sku_id)"),),
    )
    return Schema({"public.skus": skus, "public.stock": stock})


def test_a_schema_that_holds_the_design_has_no_gap_even_with_other_names():
    assert schema_gaps(DESIGN, _schema(named=False)) == []


def test_a_missing_check_is_a_gap():
    gaps = schema_gaps(DESIGN, _schema(check=False))
    assert gaps == [("stock", "CHECK stock_quantity_check (quantity >= 0) is missing")]


def test_only_the_stories_done_are_required():
    only_skus = Schema({"public.skus": _schema().tables["public.skus"]})
    assert schema_gaps(DESIGN, only_skus, {"S1"}) == []
    assert ("stock", "table stock does not exist") in schema_gaps(DESIGN, only_skus, {"S1", "S2"})


def test_types_are_compared_as_postgresql_spells_them():
    assert normal_type("timestamptz") == normal_type("timestamp with time zone")
    assert normal_type("varchar(20)") == normal_type("character varying(20)")
    assert normal_type("numeric(12, 2)") == normal_type("numeric(12,2)")
    assert normal_type("int") != normal_type("bigint")
