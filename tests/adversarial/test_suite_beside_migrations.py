"""A run's test process starts beside its migrations (`adapters/tdd/alongside.py`): a suite
that finishes first, or that reaches for its database at once, gets nothing from it.

Each migration here waits until the suite has been imported (a file the suite's module writes
into the export at once), so the two provably run at the same time, whatever the machine's
speed. A migration that then fails leaves no result of the suite's, though its test passed
without the database; one that succeeds is seen whole by a suite that connected while it ran.

Real parts: `consort init --template python-fastapi` (Alembic), the embedded PostgreSQL, the
sealed runner in its sandbox."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from consort.adapters.paired import PairedBranches
from consort.adapters.sandbox.bwrap import support
from consort.adapters.tdd.runner import RunEvidence, run_suite
from consort.adapters.vcs import Git
from consort.core.project import Project
from tests.integration.test_migrate_left_out import _commit, shop  # the Alembic project

__all__ = ["shop"]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not support().available, reason="bubblewrap cannot make a sandbox here"),
]

# Waits for the suite's flag, then does what `{then}` says.
WAITING_MIGRATION = '''"""waits for the suite"""

import pathlib
import time

from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    flag = pathlib.Path(__file__).resolve().parents[2] / "suite-imported"
    for _ in range(1200):
        if flag.exists():
            break
        time.sleep(0.1)
    print("the suite had started" if flag.exists() else "the suite never started")
    {then}


def downgrade() -> None:
    pass
'''

SUITE = """import os
import pathlib

import psycopg

pathlib.Path(__file__).resolve().parents[1].joinpath("suite-imported").write_text("yes")
EARLY = psycopg.connect(os.environ["DATABASE_URL"], connect_timeout=300)  # held until judged


def test_passes_without_the_database():
    assert True


def test_the_table_the_migration_made_is_there():
    found = EARLY.execute("SELECT to_regclass('beside_mark')::text").fetchone()[0]
    assert found == "beside_mark"
"""


def _run(shop: Path, then: str) -> tuple[RunEvidence, str]:
    files = {
        "migrations/versions/0001_waits.py": WAITING_MIGRATION.format(then=then),
        "tests/test_beside.py": SUITE,
    }
    commit = _commit(shop, files, "a migration that waits for the suite")
    project, evidence = _run_on_main(shop, commit, "beside")
    migrated = (project.layout.runs / evidence.run / "migrate.out").read_text()
    return evidence, migrated


def _run_on_main(
    shop: Path, commit: str, label: str, **options: Any
) -> tuple[Project, RunEvidence]:
    """The sealed run of `commit` on a throwaway child of main's database."""
    project = Project(shop)
    paired = PairedBranches(project)
    evidence, _ = run_suite(
        project, paired.dbs, shop, paired.names("main").database, commit, label=label, **options
    )
    return project, evidence


def test_a_suite_whose_migrations_failed_has_no_result(shop: Path) -> None:
    evidence, migrated = _run(shop, 'raise RuntimeError("this migration fails")')
    assert "the suite had started" in migrated  # they ran side by side
    assert evidence.migrate_exit not in (None, 0)
    assert evidence.exit_code is None
    assert evidence.tests == () and evidence.passing == ()
    assert evidence.report_sha256 is None
    assert any("migrate command exited" in p for p in evidence.problems)


def test_a_suite_that_connected_while_its_migrations_ran_sees_them_whole(shop: Path) -> None:
    evidence, migrated = _run(shop, 'op.execute("CREATE TABLE beside_mark (id integer)")')
    assert "the suite had started" in migrated
    assert evidence.migrate_exit == 0, evidence.output_tail
    passing = set(evidence.passing)
    assert any("test_the_table_the_migration_made_is_there" in t for t in passing), evidence
    assert any("test_passes_without_the_database" in t for t in passing), evidence
    assert evidence.sessions >= 1


# The accepted history: a lookup table and its rows. A candidate's migrations that write rows
# are refused, so a run whose baseline wrote these starts again on a fresh child migrated by the
# baseline first: the suite started beside the first child's migrations is stopped there. Where
# the suite is part of the export (the candidate's), the migration waits for it, as above.
SEEDING_MIGRATION = '''"""kinds, with their rows"""

import pathlib
import time

from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    if (root / "tests" / "test_canaries_kept.py").exists():
        for _ in range(1200):
            if (root / "suite-imported").exists():
                break
            time.sleep(0.1)
    op.execute("CREATE TABLE kinds (code text PRIMARY KEY)")
    op.execute("INSERT INTO kinds VALUES ('bolt'), ('nut')")


def downgrade() -> None:
    pass
'''

# Keeps the canary nonce of every test process that imported it in the export; its one test
# fails to show them.
NONCE_KEEPER = """import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[1]
mine = [m._NONCE for m in list(sys.modules.values()) if hasattr(m, "_NONCE")]
kept = root / "nonces"
kept.write_text((kept.read_text() if kept.exists() else "") + "".join(n + "\\n" for n in mine))
(root / "suite-imported").write_text("yes")
SEEN = ",".join(kept.read_text().split())


def test_shows_the_nonces():
    assert False, "nonces=" + SEEN + "."
"""


def test_a_run_started_again_gives_its_suite_canaries_the_stopped_one_never_saw(
    shop: Path,
) -> None:
    """The suite stopped on the first child could leave what it was given in the export; the
    suite run on the second child gets canaries of its own."""
    baseline = _commit(shop, {"migrations/versions/0001_kinds.py": SEEDING_MIGRATION}, "kinds")
    candidate = _commit(shop, {"tests/test_canaries_kept.py": NONCE_KEEPER}, "a test")
    project, evidence = _run_on_main(
        shop, candidate, "again", baseline=baseline, tests_may_change=True
    )
    out = (project.layout.runs / evidence.run / "tests.out").read_text()
    said = re.findall(r"nonces=([0-9a-f,]+)\.", out)
    assert said, out
    nonces = said[-1].split(",")
    assert len(nonces) == 2, nonces  # the stopped suite's, then the second suite's
    assert nonces[0] != nonces[1], "the second suite was given the stopped one's canaries"


# A migration that makes a function: code in the database, which the seal refuses from a
# candidate's migrations. Its migrate process starts before its child is made, held at its
# gate: what the child held before it is read first, so the function is the migration's.
CODE_MIGRATION = '''"""a function"""

from alembic import op

revision = "0001"
down_revision = None


def upgrade() -> None:
    op.execute("CREATE FUNCTION early_mark() RETURNS integer LANGUAGE sql AS 'SELECT 1'")


def downgrade() -> None:
    pass
'''


def test_a_migrate_process_started_before_its_child_is_judged_on_what_it_made(
    shop: Path,
) -> None:
    baseline = Git(shop).out("rev-parse", "HEAD")
    commit = _commit(shop, {"migrations/versions/0001_code.py": CODE_MIGRATION}, "a function")
    _project, evidence = _run_on_main(shop, commit, "early", baseline=baseline)
    assert evidence.migrate_exit == 0, evidence.output_tail
    rules = {v.rule.value for v in evidence.violations}
    assert "migration-code" in rules, evidence.violations
