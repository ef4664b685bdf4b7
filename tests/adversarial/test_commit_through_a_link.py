"""Consort's commits record a link as a link: never a file reached through one.

A sandboxed driver (leaking_driver.py) commits `app/leak/secret`, then replaces the folder
`app/leak` with a link to `.consort/db/`, which its sandbox hides. Consort's commit of its work
hashes the bytes on disk outside the sandbox: had it hashed the tracked path `app/leak/secret`
through the link, the project secret would be a blob of the story branch, which the next turn
reads with `git show`. Real project: the embedded PostgreSQL, real git, real bubblewrap.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import MINI_FEATURE, configure_cheat, consort, events, ok, start_mini_project
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_design_lane import approve_at_terminal

pytestmark = pytest.mark.integration

LEAKING = Path(__file__).parent / "leaking_driver.py"


@pytest.fixture(scope="module")
def leaked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("leak") / "counter"
    marker = f"leak-{uuid.uuid4().hex[:12]}"
    try:
        start_mini_project(root, lambda root: configure_cheat(root, marker, "driver", LEAKING))
        ok(consort("drive", "--until", "design", cwd=root, timeout=600))
        code, said = approve_at_terminal(root, MINI_FEATURE)
        assert code == 0, said
        consort("drive", cwd=root, timeout=900)  # the build, as far as it goes
        yield root
    finally:
        destroy_project_cluster(root)


def every_object(root: Path) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout


def test_the_driver_made_the_link_and_consort_committed_it_as_one(leaked: Path) -> None:
    root = leaked
    # The run read the commit's objects: `app/leak` is a link there (refused as one leading out
    # of the repository), not a folder holding what it leads to.
    linked = [
        e
        for e in events(root)
        if e["type"] == "violation.recorded"
        and e["data"].get("seal_rule") == "symlink-escapes"
        and e["data"].get("path") == "app/leak"
    ]
    assert linked, "the driver's link was never committed: the cheat did not run"


def test_no_git_object_holds_the_project_secret(leaked: Path) -> None:
    root = leaked
    secret = (root / ".consort" / "db" / "secret").read_bytes()
    assert secret
    assert secret not in every_object(root)


def test_no_later_turn_read_it(leaked: Path) -> None:
    root = leaked
    secret = (root / ".consort" / "db" / "secret").read_bytes().hex()
    for stdout in (root / ".consort" / "turns").glob("*-driver-*/stdout"):
        for line in stdout.read_text().splitlines():
            if line.startswith('{"committed secret"'):
                assert secret not in json.loads(line)["committed secret"], stdout
