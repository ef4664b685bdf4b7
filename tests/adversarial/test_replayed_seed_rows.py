"""An adopted project whose existing migrations seed rows, on a branch database that was never
migrated: every run replays those migrations, and the rows they write are the accepted history's,
not the candidate's. Only what the candidate's own migrations add on top is judged, so the honest
driver gets its GREEN, while a candidate that writes rows (into a new table, or more rows into the
seeded one) is still refused.

The project keeps SQL migrations in migrations/versions/, applied by its own migrate.py (as in
test_database_cheats.py); its first migration, there before Consort, fills a lookup table.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adversarial.test_cheating_drivers import nothing_planted, reasons, seal_rules
from tests.adversarial.test_database_cheats import MIGRATE, cheat, cheat_until_green, configure
from tests.helpers import consort, git, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_build_lane import verify_ok

pytestmark = pytest.mark.integration

# The project's history: a lookup table and the rows it starts with, never declared as seed_rows
# (the project was adopted with them), and a sequence that moved with those rows.
KINDS = (
    "CREATE TABLE kinds (id serial PRIMARY KEY, code text NOT NULL UNIQUE);\n"
    "INSERT INTO kinds (code) VALUES ('bolt'), ('nut');\n"
    "CREATE VIEW kind_codes AS SELECT code FROM kinds;\n"
)


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("seeded") / "store"
    try:
        ok(consort("init", str(root), cwd=root.parent))
        for stale in ("tests", "app", "migrations"):
            subprocess.run(["git", "rm", "-rq", "--ignore-unmatch", stale], cwd=root, check=True)
        (root / "migrate.py").write_text(MIGRATE)
        (root / "migrations" / "versions").mkdir(parents=True, exist_ok=True)
        (root / "migrations" / "versions" / "0000_kinds.sql").write_text(KINDS)
        (root / "tests").mkdir(exist_ok=True)
        (root / "tests" / "__init__.py").write_text("")
        configure(root, "noop")
        git(root, "add", "-A")
        git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a store")
        # unlike test_database_cheats, nobody migrates the branch databases by hand: every run
        # replays 0000_kinds.sql on its child
        ok(consort("intake", "feature", "--title", "Store", cwd=root, input_text="A store."))
        result = consort("drive", cwd=root, timeout=600)
        assert result.returncode == 3, result.stdout + result.stderr  # the noop driver
        yield root
    finally:
        destroy_project_cluster(root)


@pytest.mark.parametrize(
    ("mode", "rule"),
    [
        ("migration-inserts-row", "migration-rows"),
        ("migration-adds-seed-rows", "migration-rows"),
        ("migration-constant-view", "migration-code"),
    ],
)
def test_the_candidates_own_rows_and_code_are_still_refused(adopted, mode, rule):
    new = cheat(adopted, mode)
    assert rule in seal_rules(new), (seal_rules(new), reasons(new))
    assert not any(e["type"] == "green.verified" for e in new)
    found = [
        v
        for e in new
        if e["type"] == "green.failed"
        for v in e["data"]["run"]["violations"]
        if v["rule"].startswith("migration-")
    ]
    # the replayed history is not what is refused: its kinds rows, their sequence and its view
    # are the history's own (the cheat that adds kinds rows moves that sequence on itself)
    assert "public.kind_codes" not in {v["path"] for v in found}
    if mode != "migration-adds-seed-rows":
        assert not {"public.kinds", "public.kinds_id_seq"} & {v["path"] for v in found}
    verify_ok(adopted)
    nothing_planted(adopted)


def test_the_honest_driver_gets_its_green_over_replayed_seed_rows(adopted):
    new = cheat_until_green(adopted)
    green = next((e for e in new if e["type"] == "green.verified"), None)
    assert green is not None, (seal_rules(new), reasons(new))
    assert green["data"]["run"]["violations"] == []
    assert green["data"]["run"]["sessions"] > 0
    runs = sorted((adopted / ".consort" / "runs").glob("*-green-*"))
    assert (runs[-1] / "migrate-baseline.out").is_file()  # the history was replayed first
    verify_ok(adopted)
