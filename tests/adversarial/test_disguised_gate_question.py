"""An artifact that shows the person something else than it says when a gate asks about it.

The spec author (disguising_spec_author.py) writes an acceptance criterion "then it is 41",
followed by a carriage return, the terminal's erase-line sequence (`ESC [ 2 K`) and the line
the person expects ("then it is 42"). `consort approve design` prints each criterion in its
question; handed those characters raw, the terminal erases the real criterion and shows the
fake one, and the approval binds to the hash of a spec the person never read. Every character a
terminal acts on instead of showing is written out as its escape in what Consort prints. Real
project: the embedded PostgreSQL, real git, real bubblewrap, a real pseudo-terminal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import MINI, TDD_AGENT, at_terminal, consort, ok, start_mini_project
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

AUTHOR = Path(__file__).with_name("disguising_spec_author.py")


@pytest.fixture(scope="module")
def at_the_gate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("disguise") / "shop"
    try:
        honest = [sys.executable, str(TDD_AGENT), str(MINI), "honest"]
        author = [sys.executable, str(AUTHOR), str(TDD_AGENT), str(MINI)]
        config = f"""
[test]
command = {json.dumps([sys.executable, "-m", "pytest", "-q"])}
[migrate]
command = []
[agents]
default = "command"
command = {json.dumps(honest)}
[agents.spec-author]
adapter = "command"
command = {json.dumps(author)}
"""
        start_mini_project(root, lambda at: (at / "consort.toml").write_text(config))
        ok(consort("drive", "--until", "design", cwd=root, timeout=600))
        yield root
    finally:
        destroy_project_cluster(root)


def test_the_spec_holds_the_disguise(at_the_gate: Path) -> None:
    (spec,) = (at_the_gate / ".consort" / "features").glob("*/feature-spec.json")
    then = json.loads(spec.read_text())["stories"][0]["acceptance_criteria"][0]["then"]
    assert then.startswith("it is 41\r\x1b[2K")


def test_the_gate_question_shows_the_criterion_as_it_is(at_the_gate: Path) -> None:
    code, seen = at_terminal(at_the_gate, "approve", "design", "F1")
    assert code != 0  # answered no: nothing is recorded
    assert b"[y/N]" in seen, seen
    assert b"\x1b[2K" not in seen and b"41\r" not in seen, seen
    assert b"then it is 41\\x0d\\x1b[2K" in seen, seen
    assert not any(
        json.loads(line)["type"] == "gate.approved"
        for line in (at_the_gate / ".consort" / "ledger.jsonl").read_text().splitlines()
    )
