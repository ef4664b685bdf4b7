"""What migrations leave in a run's child besides schema, read from the real embedded server."""

from __future__ import annotations

import psycopg
import pytest

from consort.adapters.db.migration_trace import (
    code_objects,
    column_defaults,
    large_objects,
    sequence_values,
    settle,
    table_writes,
)
from consort.adapters.paired import PairedBranches
from consort.adapters.tdd.migration_rules import (
    code_violations,
    default_violations,
    missing_seed_rows,
    row_violations,
    sequence_violations,
)
from consort.core.project import find_project
from consort.core.seal import SealRule

pytestmark = pytest.mark.integration


def test_rows_and_code_a_migration_leaves_are_read_back(project):
    paired = PairedBranches(find_project(project))
    main = paired.names("main").database
    with paired.dbs.ephemeral(main) as child:
        with paired.dbs.backend.admin(child.database) as conn:
            before = code_objects(conn)
            sequences_before = sequence_values(conn)
        # what a migrate command does, with the child's own login
        with psycopg.connect(child.url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kinds (code text PRIMARY KEY)")
            conn.execute("CREATE TABLE items (id serial PRIMARY KEY, qty int)")
            conn.execute("INSERT INTO kinds VALUES ('open'), ('done')")
            conn.execute("CREATE TABLE orders (id serial PRIMARY KEY)")
            conn.execute("SELECT setval('orders_id_seq', 41)")
            conn.execute("DO $$ BEGIN INSERT INTO items (qty) VALUES (1); END $$")
            conn.execute("CREATE VIEW stocked AS SELECT 1 AS qty")
            conn.execute("CREATE FUNCTION one() RETURNS int LANGUAGE sql AS 'SELECT 1'")
            conn.execute(
                "CREATE FUNCTION fill() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN NEW.qty := 3; RETURN NEW; END $$"
            )
            conn.execute(
                "CREATE TRIGGER fill_qty BEFORE INSERT ON items "
                "FOR EACH ROW EXECUTE FUNCTION fill()"
            )
            # the counters are not the child's to reset
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT pg_stat_reset()")
        settle(paired.dbs.backend, child.database)
        with paired.dbs.backend.admin(child.database) as conn:
            writes = table_writes(conn)
            created = code_objects(conn) - before
            sequences = sequence_values(conn)
            seeds = {"public.kinds": [{"code": "open"}, {"code": "done"}]}
            assert missing_seed_rows(conn, writes, seeds) == {}
            wrong = {"public.kinds": [{"code": "open"}, {"code": "closed"}]}
            assert missing_seed_rows(conn, writes, wrong) == {"public.kinds": [{"code": "closed"}]}
    assert writes == {"public.kinds": 2, "public.items": 1}
    assert created == {
        ("view", "public.stocked"),
        ("function", "public.one()"),
        ("function", "public.fill()"),
        ("trigger", "public.items.fill_qty"),
    }
    found = row_violations(writes, seeds, [])
    assert [(v.rule, v.path) for v in found] == [(SealRule.MIGRATION_ROWS, "public.items")]
    # the items sequence moved with the row written; the orders one was set by hand
    assert sequences["public.orders_id_seq"] == (42, 1, "public.orders")
    moved = sequence_violations(sequences_before, sequences, writes, seeds, [])
    assert {v.path for v in moved} == {"public.items_id_seq", "public.orders_id_seq"}
    seeded = {**seeds, "public.items": [{"qty": 3}]}
    moved = sequence_violations(sequences_before, sequences, writes, seeded, [])
    assert [v.path for v in moved] == ["public.orders_id_seq"]


def test_values_the_schema_fills_in_or_keeps_outside_tables_are_read_back(project):
    """Defaults, generated columns, domains, sequences that start or restart elsewhere, row
    policies, settings of the child's role, large objects: each can hand the code the value a
    test expects, and each is read back as the migrations left it."""
    paired = PairedBranches(find_project(project))
    main = paired.names("main").database
    with paired.dbs.ephemeral(main) as child:
        with paired.dbs.backend.admin(child.database) as conn:
            code_before = code_objects(conn)
            sequences_before = sequence_values(conn)
            defaults_before = column_defaults(conn)
            objects_before = large_objects(conn)
        with psycopg.connect(child.url, autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                " status text NOT NULL DEFAULT 'open', placed timestamptz DEFAULT now(),"
                " qty int DEFAULT 42, total int GENERATED ALWAYS AS (qty * 2) STORED)"
            )
            conn.execute("CREATE DOMAIN answer AS int DEFAULT 42")
            conn.execute("CREATE TABLE tallies (n answer)")
            conn.execute(
                "CREATE TABLE invoices (id bigint GENERATED ALWAYS AS IDENTITY (START WITH 42))"
            )
            conn.execute("CREATE SEQUENCE counter")
            conn.execute("ALTER SEQUENCE counter RESTART WITH 42")
            conn.execute("CREATE SEQUENCE plain")
            conn.execute("ALTER TABLE orders ENABLE ROW LEVEL SECURITY")
            conn.execute("CREATE POLICY mine ON orders USING (qty > 1)")
            conn.execute("ALTER ROLE CURRENT_USER SET application_name = '42'")
            conn.execute("SELECT lo_from_bytea(0, '42')")
        settle(paired.dbs.backend, child.database)
        with paired.dbs.backend.admin(child.database) as conn:
            created = code_objects(conn) - code_before
            sequences = sequence_values(conn)
            defaults = column_defaults(conn)
            objects = large_objects(conn) - objects_before
    assert {kind for kind, _ in created} >= {"row policy", "row security", "setting"}
    assert ("setting", "role application_name=42") in created
    assert {v.path for v in code_violations(created, [])} >= {
        "public.orders.mine",
        "public.orders",
    }
    moved = sequence_violations(sequences_before, sequences, {}, {}, [])
    # the identity that starts at 42 and the counter restarted there; not the fresh ones
    assert {v.path for v in moved} == {"public.invoices_id_seq", "public.counter"}
    assert sequences["public.plain"].next_value == 1
    assert objects == 1
    declared = {"public.orders.status": "'open'", "public.orders.placed": "CURRENT_TIMESTAMP"}
    found = default_violations(defaults_before, defaults, declared, [])
    # declared defaults hold, read loosely; the undeclared one, the generated column and the
    # domain's default are the migration's own choice
    assert {v.path for v in found} == {
        "public.orders.qty",
        "public.orders.total",
        "domain public.answer",
    }
    assert all(v.rule is SealRule.MIGRATION_DEFAULT for v in found)
    allowed = default_violations(
        defaults_before, defaults, declared, ["migration-default:public.orders.*"]
    )
    assert {v.path for v in allowed} == {"domain public.answer"}


def test_comments_enum_labels_and_history_rows_are_read_back(project):
    from consort.adapters.db.migration_trace import catalog_values, history_rows

    paired = PairedBranches(find_project(project))
    main = paired.names("main").database
    with paired.dbs.ephemeral(main) as child:
        with paired.dbs.backend.admin(child.database) as conn:
            before = catalog_values(conn)
        with psycopg.connect(child.url, autocommit=True) as conn:
            conn.execute("CREATE TABLE tallies (n int)")
            conn.execute("COMMENT ON TABLE tallies IS '1'")
            conn.execute("COMMENT ON COLUMN tallies.n IS 'the count'")
            conn.execute("CREATE TYPE mood AS ENUM ('calm', 'wild')")
            conn.execute("CREATE TABLE schema_migrations (name text)")
            conn.execute("INSERT INTO schema_migrations VALUES ('0001.sql'), ('CHEAT')")
        with paired.dbs.backend.admin(child.database) as conn:
            after = catalog_values(conn)
            rows = history_rows(conn, "public.schema_migrations")
    new = {k: v for k, v in after.comments.items() if before.comments.get(k) != v}
    assert new == {"table public.tallies": "1", "table column public.tallies.n": "the count"}
    assert after.enums["public.mood"] == ("calm", "wild")
    assert sorted(rows) == [("0001.sql",), ("CHEAT",)]
