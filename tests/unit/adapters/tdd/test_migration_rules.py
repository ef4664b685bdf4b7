"""Rows and SQL code a candidate's migrations leave: what is refused, what a design or a person
allows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consort.adapters.tdd.migration_rules import code_violations, declared_seeds, row_violations
from consort.core.artifacts.db_design import DbDesign
from consort.core.layout import Layout
from consort.core.seal import SealRule

KINDS = {
    "name": "kinds",
    "columns": [{"name": "code", "type": "text"}],
    "primary_key": ["code"],
}


def design(**kinds: object) -> dict:
    return {"feature": "F1", "tables": [{**KINDS, **kinds}]}


def test_a_design_without_seed_rows_still_loads_and_declares_none():
    assert DbDesign.model_validate(design()).tables[0].seed_rows == []


def test_seed_rows_name_declared_columns():
    with pytest.raises(ValueError, match="seed row 1 lists unknown column name"):
        DbDesign.model_validate(design(seed_rows=[{"name": "open"}]))


def test_seeds_are_read_from_every_features_design(tmp_path: Path):
    layout = Layout(tmp_path)
    for feature, code in (("F1", "open"), ("F2", "done")):
        folder = layout.feature(feature)
        folder.mkdir(parents=True)
        data = design(seed_rows=[{"code": code}]) | {"feature": feature}
        (folder / "db-design.json").write_text(json.dumps(data))
    assert declared_seeds(layout) == {"public.kinds": [{"code": "open"}, {"code": "done"}]}


def test_rows_written_where_no_seed_is_declared_are_refused():
    found = row_violations({"public.items": 1}, {}, [])
    assert [(v.rule, v.path) for v in found] == [(SealRule.MIGRATION_ROWS, "public.items")]
    assert "seed_rows" in found[0].detail


def test_a_migration_tools_history_and_declared_seeds_are_not():
    writes = {"public.alembic_version": 2, "public.schema_migrations": 1, "public.kinds": 2}
    seeds = {"public.kinds": [{"code": "open"}, {"code": "done"}]}
    assert row_violations(writes, seeds, []) == []


def test_more_rows_than_declared_and_missing_declared_rows_are_refused():
    seeds = {"public.kinds": [{"code": "open"}]}
    assert len(row_violations({"public.kinds": 2}, seeds, [])) == 1
    missing = {"public.kinds": [{"code": "open"}]}
    found = row_violations({"public.kinds": 1}, seeds, [], missing)
    assert [v.path for v in found] == ["public.kinds"]


def test_a_person_allows_a_table_or_code_in_consort_toml():
    assert row_violations({"public.items": 5}, {}, ["migration-rows:public.items"]) == []
    created = {("view", "public.stocked"), ("function", "public.one()")}
    assert code_violations(created, ["migration-code:public.one*"]) == [
        v for v in code_violations(created, []) if v.path == "public.stocked"
    ]
    assert code_violations(created, ["migration-code"]) == []


def test_a_frozen_file_changed_or_removed_during_a_run_is_found(tmp_path: Path):
    import subprocess

    from consort.adapters.tdd.runner import frozen_changes

    (tmp_path / "tests").mkdir()
    test_file = tmp_path / "tests" / "test_a.py"
    test_file.write_text("def test_a():\n    assert f() == 1\n")
    sha = subprocess.run(
        ["git", "hash-object", str(test_file)], capture_output=True, text=True, check=True
    ).stdout.strip()
    frozen = {"tests/test_a.py": sha, "tests/test_b.py": sha}
    found = frozen_changes(tmp_path, frozen, "migrate command")
    assert [(v.rule, v.path) for v in found] == [(SealRule.TEST_CONFIG_CHANGED, "tests/test_b.py")]
    test_file.write_text("def test_a():\n    pass\n")
    assert {v.path for v in frozen_changes(tmp_path, frozen, "test process")} == {
        "tests/test_a.py",
        "tests/test_b.py",
    }


def test_declared_defaults_are_read_and_compared_loosely(tmp_path: Path):
    from consort.adapters.tdd.migration_rules import declared_defaults, same_default

    layout = Layout(tmp_path)
    folder = layout.feature("F1")
    folder.mkdir(parents=True)
    columns = [{"name": "code", "type": "text", "default": "'open'"}]
    (folder / "db-design.json").write_text(json.dumps(design(columns=columns)))
    assert declared_defaults(layout) == {"public.kinds.code": "'open'"}
    assert same_default("'open'", "'open'::text")
    assert same_default("now()", "CURRENT_TIMESTAMP")
    assert same_default("0", "(0)")
    assert same_default("'{}'", "'{}'::jsonb")
    assert not same_default("0", "42")
    assert not same_default("'open'", "'done'::text")


def test_a_default_the_design_does_not_declare_is_refused():
    from consort.adapters.db.migration_trace import DefaultState
    from consort.adapters.tdd.migration_rules import default_violations

    before = {"public.kinds.code": DefaultState("'open'::text", generated=False)}
    after = {
        **before,  # there before the candidate's migrations: not theirs
        "public.items.qty": DefaultState("42", generated=False),
        "public.items.id": DefaultState("nextval('items_id_seq'::regclass)", generated=False),
        "public.items.total": DefaultState("(qty * 2)", generated=True),
        "public.items.placed": DefaultState("now()", generated=False),
    }
    declared = {"public.items.placed": "now()", "public.items.total": "qty * 2"}
    found = default_violations(before, after, declared, [])
    # an id from a sequence is the sequence rule's; a generated column computes, declared or not
    assert {v.path for v in found} == {"public.items.qty", "public.items.total"}
    assert {v.rule for v in found} == {SealRule.MIGRATION_DEFAULT}
    changed = {"public.kinds.code": DefaultState("'done'::text", generated=False)}
    assert [v.path for v in default_violations(before, changed, {}, [])] == ["public.kinds.code"]
    allow = ["migration-default:public.items.*"]
    assert default_violations(before, after, declared, allow) == []


def test_a_sequence_moved_on_or_started_elsewhere_is_refused_unless_seeds_explain_it():
    from consort.adapters.db.migration_trace import SequenceState
    from consort.adapters.tdd.migration_rules import sequence_violations

    before = {"public.orders_id_seq": SequenceState(1, 1, "public.orders")}
    after = {
        "public.orders_id_seq": SequenceState(42, 1, "public.orders"),  # setval / RESTART
        "public.counter": SequenceState(42, 1, None),  # CREATE SEQUENCE ... START 42
        "public.plain": SequenceState(1, 1, None),  # a fresh one
        "public.down": SequenceState(-1, -1, None),  # a fresh descending one
        "public.kinds_id_seq": SequenceState(3, 1, "public.kinds"),  # moved by declared seeds
    }
    seeds = {"public.kinds": [{"code": "open"}, {"code": "done"}]}
    found = sequence_violations(before, after, {"public.kinds": 2}, seeds, [])
    assert {v.path for v in found} == {"public.orders_id_seq", "public.counter"}
    assert sequence_violations(before, after, {"public.kinds": 2}, seeds, ["migration-rows"]) == []


def test_a_history_table_holds_one_row_per_migration_and_no_more():
    from consort.adapters.tdd.migration_rules import history_violations

    rows = [("0000_notes.sql",), ("0001_items.sql",)]
    table = "public.schema_migrations"
    assert history_violations({table: rows}, 2, set(), ()) == []
    found = history_violations({table: [*rows, ("CHEAT",)]}, 2, set(), ())
    assert [(v.rule, v.path) for v in found] == [(SealRule.MIGRATION_ROWS, table)]
    # no migration found where they are looked for: nothing to count against
    assert history_violations({table: [*rows, ("x",)]}, 0, set(), ()) == []
    # a lock table holds its state; a person allows a table
    lock = {"public.knex_migrations_lock": [(1, 0)]}
    assert history_violations(lock, 2, set(), ()) == []
    # Django's history records its contrib apps' migrations too, which the tree does not hold
    django = {"public.django_migrations": [("auth", f"{n:04}") for n in range(12)]}
    assert history_violations(django, 2, set(), ()) == []
    allow = ("migration-rows:public.schema_migrations",)
    assert history_violations({table: [*rows, ("x",)]}, 2, set(), allow) == []


def test_an_alembic_version_must_be_a_revision_of_the_tree():
    from consort.adapters.tdd.migration_rules import alembic_revisions, history_violations

    sources = {
        "migrations/versions/0001_items.py": 'revision = "ab12"\ndown_revision = None\n',
        "migrations/versions/0002_kinds.py": "revision: str = 'cd34'\ndown_revision = 'ab12'\n",
        "migrations/env.py": "target_metadata = None\n",
    }
    revisions = alembic_revisions(sources)
    assert revisions == {"ab12", "cd34"}
    table = "public.alembic_version"
    assert history_violations({table: [("cd34",)]}, 3, revisions, ()) == []
    found = history_violations({table: [("cd34",), ("42",)]}, 3, revisions, ())
    assert [v.rule for v in found] == [SealRule.MIGRATION_ROWS]
    assert "'42'" in str(found[0])


def test_comments_and_undeclared_enum_labels_are_refused(tmp_path: Path):
    from consort.adapters.db.migration_trace import CatalogValues
    from consort.adapters.tdd.migration_rules import catalog_violations, declared_values

    layout = Layout(tmp_path)
    folder = layout.feature("F1")
    folder.mkdir(parents=True)
    status = {"name": "status", "type": "order_status"}
    table = {
        "name": "orders",
        "columns": [{"name": "id", "type": "bigint"}, status],
        "primary_key": ["id"],
        "checks": [{"name": "orders_status_check", "expression": "status IN ('open', 'done')"}],
    }
    (folder / "db-design.json").write_text(json.dumps({"feature": "F1", "tables": [table]}))
    declared = declared_values(layout)
    assert {"open", "done"} <= declared
    assert "order_status" not in declared  # a type's name is no label

    before = CatalogValues({"table public.notes": "kept"}, {"public.order_status": ("open",)})
    honest = CatalogValues(
        {"table public.notes": "kept"}, {"public.order_status": ("open", "done")}
    )
    assert catalog_violations(before, honest, declared, ()) == []
    cheat = CatalogValues(
        {"table public.notes": "kept", "table public.items": "1"},
        {"public.order_status": ("open", "done"), "public.tally": ("1",)},
    )
    found = catalog_violations(before, cheat, declared, ())
    assert {(v.rule, v.path) for v in found} == {
        (SealRule.MIGRATION_CATALOG, "table public.items"),
        (SealRule.MIGRATION_CATALOG, "public.tally"),
    }
    allow = ("migration-catalog:table public.items", "migration-catalog:public.tally")
    assert catalog_violations(before, cheat, declared, allow) == []
