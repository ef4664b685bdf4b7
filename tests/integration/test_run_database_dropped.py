"""A GREEN run's throwaway database is dropped while the server keeps running (a person's DROP
DATABASE, another process's gc): the run fails for a reason that is Consort's, not the driver's.
The drive repeats the run on a fresh child, records why, and uses up no attempt — as when the
server itself went away.

The drop is exact: CONSORT_CRASH_AT pauses the drive when the third sealed run (T1's GREEN,
after the story's baseline and T1's RED) is about to start its tests, its child migrated; the
test drops that child as the administrator, then lets the drive go on.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from consort.adapters.db.backend import open_backend
from consort.adapters.db.branching import BranchDatabases, DbKind
from consort.core.project import Project
from tests.crash_campaign import campaign, campaign_project, drive_interrupted_at_green
from tests.helpers import consort

pytestmark = pytest.mark.integration


@pytest.fixture
def counter(tmp_path: Path) -> Iterator[Path]:
    with campaign_project(tmp_path) as root:
        yield root


def test_a_run_database_dropped_during_green_is_consorts_failure(counter: Path) -> None:
    root = counter

    def drop_the_run_database() -> None:
        dbs = BranchDatabases(open_backend(Project(root)))
        children = [i for i in dbs.infos() if i.kind is DbKind.EPHEMERAL]
        with dbs.backend.admin() as conn:
            # an earlier run's child may still be on its way out (dropped in the background):
            # its login ended first, so the run's own is the one whose role can log in
            in_use = [
                child.database
                for child in children
                if conn.execute(
                    "SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (child.role,)
                ).fetchone()
                == (True,)
            ]
            assert len(in_use) == 1, children
            conn.execute(f'DROP DATABASE "{in_use[0]}" WITH (FORCE)')

    out = drive_interrupted_at_green(root, drop_the_run_database)
    assert "Consort's failure, not the agent's" in out

    events = campaign.events(root)
    restarted = [e for e in events if e["type"] == "server.restarted"]
    assert len(restarted) == 1, restarted
    assert restarted[0]["data"]["step"] == "green-S1-T1"
    assert "was dropped" in restarted[0]["data"]["reason"]
    assert [e["type"] for e in events if e["type"].endswith(".failed")] == []
    started = [e["data"] for e in events if e["type"] == "turn.started"]
    assert [t["attempt"] for t in started if t["step"] == "green"] == [1, 1]  # one turn per item
    verify = consort("verify", cwd=root)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert campaign.leftovers(root) == []
