"""An explorer that cheats from inside its spike, against a real project: the embedded
PostgreSQL, real git, the real `consort` CLI.

The explorer (spike_explorer.py) runs in the spike's worktree with the DATABASE_URL its `.env`
gives. Its spike's database is a child of the parent's: every reach into the parent (its data,
its schema, the database itself, the server) is refused and the parent is as it was; no
credential but its own is in its reach; and nothing it writes moves its time box, which ends when
the ledger says, with its notes kept and nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.helpers import consort, env_url, git, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

EXPLORER = Path(__file__).parent / "spike_explorer.py"
OWN_DATABASE_ONLY = {"own-table"}  # the one thing the explorer may do: work in its own copy


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    project = tmp_path / "shop"
    try:
        ok(consort("init", str(project), cwd=tmp_path))
        yield project
    finally:
        destroy_project_cluster(project)


def _schema_and_data(url: str) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    with psycopg.connect(url) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' ORDER BY 1, 2"
        ).fetchall()
        rows = conn.execute("SELECT sku, qty FROM stock ORDER BY sku").fetchall()
    return columns, rows


def _explore(root: Path, worktree: Path, report: Path) -> dict[str, str]:
    url = env_url(worktree)
    assert url is not None
    environment = {"PATH": os.environ["PATH"], "HOME": str(worktree), "DATABASE_URL": url}
    subprocess.run(
        [sys.executable, str(EXPLORER), str(report), "main"],
        cwd=worktree,
        env=environment,
        check=True,
        timeout=120,
    )
    attempts: dict[str, str] = json.loads(report.read_text())
    return attempts


def test_a_cheating_explorer_never_reaches_the_parent_nor_moves_its_time_box(
    root: Path, tmp_path: Path
) -> None:
    main_url = env_url(root)
    assert main_url is not None
    with psycopg.connect(main_url) as conn:
        conn.execute("CREATE TABLE stock (sku text PRIMARY KEY, qty int NOT NULL)")
        conn.execute("INSERT INTO stock VALUES ('A-1', 5), ('B-2', 7)")
    before = _schema_and_data(main_url)

    spike = json.loads(ok(consort("spike", "cheat", "--ttl", "3s", "--json", cwd=root)))
    worktree = root / spike["worktree"]
    spike_url = env_url(worktree)
    assert spike_url is not None and spike_url.endswith("/" + spike["database"])
    assert _schema_and_data(spike_url) == before  # a child: the parent's data, copied

    attempts = _explore(root, worktree, tmp_path / "report.json")

    allowed = {name for name, result in attempts.items() if result == "succeeded"}
    assert allowed == OWN_DATABASE_ONLY, attempts
    assert _schema_and_data(main_url) == before

    # No credential but its own: not the parent's role, not the admin's, not the project secret.
    seen = (tmp_path / "seen.txt").read_text()
    main_password = main_url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    secret = (root / ".consort" / "db" / "secret").read_text().strip()
    assert main_password not in seen
    assert secret not in seen
    assert "consort_admin" not in seen

    # Its time box is the ledger's: nothing it wrote moved it. (Read without collecting.)
    listed = json.loads(ok(consort("status", "--json", cwd=root)))
    (row,) = [s for s in listed["spikes"] if s["name"] == "cheat"]
    assert row["expires"] == spike["expires"]
    # Starting it again with a longer box is refused, from the project and from the worktree.
    for where in (root, worktree):
        again = consort("spike", "cheat", "--ttl", "7d", cwd=where)
        assert again.returncode == 2 and "started already" in again.stderr, again.stderr

    time.sleep(3.5)  # past the three-second box, whatever the machine's speed
    collected = json.loads(ok(consort("spike", "list", "--json", cwd=root)))
    assert [c["name"] for c in collected["collected"]] == ["cheat"]
    assert not worktree.exists()
    assert git(root, "branch", "--list", "spike/cheat") == ""
    with psycopg.connect(main_url) as conn:
        names = {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}
    assert spike["database"] not in names
    assert _schema_and_data(main_url) == before
    # Only its notes stay; the forged state files went with the worktree.
    kept = root / ".consort" / "spikes" / "cheat"
    assert sorted(p.name for p in kept.iterdir()) == ["notes.md"]
    assert "The explorer's notes." in (kept / "notes.md").read_text()
    ok(consort("verify", cwd=root))
