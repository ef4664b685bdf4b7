"""What a turn leaves in its outputs folder beside its outputs is never committed as evidence.

The outputs folder is the one folder of `.consort/` a turn may write. After a promote, Consort
commits the accepted turn outputs with the evidence, on the branch it promoted into; it took
every file of every outputs folder. A sandboxed spec author (planting_spec_author.py) left a
file, a folder and a link to an absolute path there, each named PLANTED: Consort committed all
of them on main, outside every rule a turn's changes pass, and the link made every later run of
main (and of every branch made from it) refused as a link out of the repository. Now only the
outputs each turn's task.json declared are committed. Real project: the embedded PostgreSQL,
real git, real bubblewrap, a full drive from intake to promote.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import MINI, TDD_AGENT, consort, git, ok, start_mini_project
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

AUTHOR = Path(__file__).with_name("planting_spec_author.py")


@pytest.fixture(scope="module")
def promoted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("planted") / "shop"
    try:
        honest = [sys.executable, str(TDD_AGENT), str(MINI), "honest"]
        author = [sys.executable, str(AUTHOR), str(TDD_AGENT), str(MINI)]
        server = [sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1"]
        config = f"""
[test]
command = {json.dumps([sys.executable, "-m", "pytest", "-q"])}
[migrate]
command = []
[deploy]
command = {json.dumps(server)}
smoke = ["/"]
[gates]
mode = "proxy"
[agents]
default = "command"
command = {json.dumps(honest)}
[agents.spec-author]
adapter = "command"
command = {json.dumps(author)}
"""
        start_mini_project(root, lambda at: (at / "consort.toml").write_text(config))
        drive = consort("drive", cwd=root, timeout=1200)
        assert drive.returncode == 0, drive.stdout + drive.stderr
        assert "evidence committed" in drive.stdout + drive.stderr
        yield root
    finally:
        destroy_project_cluster(root)


def _committed(root: Path) -> list[str]:
    return git(root, "ls-tree", "-r", "--name-only", "main", "--", ".consort/turns").split()


def test_the_turn_left_its_plants_in_its_outputs_folder(promoted: Path) -> None:
    (folder,) = (promoted / ".consort" / "turns").glob("*-spec-author-spec/outputs")
    assert {p.name for p in folder.iterdir()} >= {"PLANTED.txt", "PLANTED-link", "PLANTED-dir"}


def test_only_the_declared_outputs_are_committed(promoted: Path) -> None:
    committed = _committed(promoted)
    assert not [path for path in committed if "PLANTED" in path], committed
    assert any(path.endswith("-spec-author-spec/outputs/feature-spec.json") for path in committed)
    assert any(path.endswith("-navigator-red/outputs/cycle-plan.json") for path in committed)


def test_main_still_runs_and_verifies(promoted: Path) -> None:
    tested = consort("test", cwd=promoted, timeout=600)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    ok(consort("verify", cwd=promoted))
