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
