"""A throwaway child after its run or turn: the drop itself runs behind (it waits for a
checkpoint), but nothing reaches the child from the moment its block ends.

The cheat: a test process (or an agent, or something either left behind) keeps its session open,
or logs in again later with the URL it was given, to read what the run left or to change it
after the verdict.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from consort.adapters.db.branching import DROPS
from consort.adapters.paired import PairedBranches
from consort.core.project import find_project
from tests.integration.conftest import project  # noqa: F401 -- the shared project fixture

pytestmark = pytest.mark.integration


def _role_exists(paired: PairedBranches, role: str) -> bool:
    with paired.backend.admin() as conn:
        return (
            conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            is not None
        )


def test_a_child_is_out_of_reach_when_its_block_ends_and_gone_when_the_drops_finish(
    project: Path,  # noqa: F811 -- the fixture imported above
) -> None:
    paired = PairedBranches(find_project(project))
    main = paired.names("main").database
    with paired.dbs.ephemeral(main) as child:
        kept = psycopg.connect(child.url, autocommit=True)
        kept.execute("CREATE TABLE left_behind (n int)")
    with pytest.raises(psycopg.OperationalError):  # the session held past the block was ended
        kept.execute("INSERT INTO left_behind VALUES (1)")
    kept.close()
    with pytest.raises(psycopg.OperationalError):  # and the URL no longer logs in
        psycopg.connect(child.url, connect_timeout=10).close()
    DROPS.finish()
    assert not paired.dbs.exists(child.database)
    assert not _role_exists(paired, child.role)
