"""A driver whose failing code dresses up as a server that went away, to be given its run again
without the attempt counting: it ends its own database session and then fails with the words of
a refused connection. Whether the server was lost is decided by Consort's own look at the server
(its postmaster's start time, over a connection of Consort's), so the failure counts: the
attempts are used up and the step escalates, and no `server.restarted` is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crash_campaign import campaign, campaign_project
from tests.helpers import consort, ok

pytestmark = pytest.mark.integration


@pytest.fixture
def faker(tmp_path: Path) -> Iterator[Path]:
    with campaign_project(tmp_path, driver="fakes-server-death") as root:
        yield root


def test_failing_code_that_looks_like_a_dead_server_uses_up_its_attempts(faker: Path) -> None:
    root = faker
    server = json.loads(ok(consort("db", "status", "--json", cwd=root)))["pid"]
    drive = consort("drive", cwd=root, timeout=900)
    said = drive.stdout + drive.stderr
    assert drive.returncode == 3, said  # an escalation: the attempts were counted
    assert "Connection refused" in said  # the disguise reached the run's output
    events = campaign.events(root)
    failed = [e for e in events if e["type"] == "green.failed"]
    assert [e["data"]["attempt"] for e in failed] == [1, 2]  # GREEN, then its one repair
    assert [e for e in events if e["type"] == "server.restarted"] == []
    assert any(e["type"] == "escalation.raised" for e in events)
    # the server the drive found is the one still serving: nobody restarted it
    assert json.loads(ok(consort("db", "status", "--json", cwd=root)))["pid"] == server
    verify = consort("verify", cwd=root)
    assert verify.returncode == 0, verify.stdout + verify.stderr
