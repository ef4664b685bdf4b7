"""What migrations leave in a run's child besides schema, read from the real embedded server."""

from __future__ import annotations

import psycopg
import pytest

from consort.adapters.db.migration_trace import (
    code_objects,
    sequence_values,
    settle,
    table_writes,
)
from consort.adapters.paired import PairedBranches
from consort.adapters.tdd.migration_rules import (
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
    assert sequences["public.orders_id_seq"] == (41, "public.orders")
    moved = sequence_violations(sequences_before, sequences, writes, seeds, [])
    assert {v.path for v in moved} == {"public.items_id_seq", "public.orders_id_seq"}
    seeded = {**seeds, "public.items": [{"qty": 3}]}
    moved = sequence_violations(sequences_before, sequences, writes, seeded, [])
    assert [v.path for v in moved] == ["public.orders_id_seq"]
