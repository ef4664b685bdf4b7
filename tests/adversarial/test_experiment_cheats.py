"""Approaches that cheat from inside an experiment, on StockFlow with the real sandbox, git,
PostgreSQL and `consort` CLI.

Three approaches race at once: an honest one; one whose driver tries to select itself (and to
approve the story) from inside its turn; one whose driver writes into the honest approach's
worktree, the shared frozen RED tests and the main checkout's ledger. The selection stays a
person's, nothing lands outside the cheat's own worktree, its change to the tests is reverted
and fails its attempts, and the honest approach runs as if it were alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import consort, git
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_experiments import SUBJECT, approach, ledger, stockflow

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cheated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    root = tmp_path_factory.mktemp("cheats") / "stockflow"
    try:
        stockflow(
            root,
            approach("honest", "honest")
            + approach("cheat-select", "cheat-select")
            + approach("cheat-reach", "cheat-reach"),
        )
        result = consort(
            "experiment", "F1/S1", "--approaches", "3", "--json", cwd=root, timeout=900
        )
        assert result.returncode == 0, result.stdout + result.stderr
        yield root, json.loads(result.stdout)
    finally:
        destroy_project_cluster(root)


def _turn_output(root: Path, name: str) -> str:
    attempts = [
        e["data"]
        for e in ledger(root)
        if e["type"] == "experiment.attempted" and e["data"]["approach"] == name
    ]
    assert attempts, f"{name} made no attempt"
    turn = root / ".consort" / "turns" / attempts[0]["turn"]
    return (turn / "stdout").read_text() + (turn / "stderr").read_text()


def test_an_approach_cannot_select_itself_or_approve_the_story(cheated):
    root, compared = cheated
    said = _turn_output(root, "cheat-select")
    assert "experiment select F1/S1 cheat-select -> 0" not in said
    assert "approve story F1/S1 -> 0" not in said
    kinds = [e["type"] for e in ledger(root)]
    assert "experiment.selected" not in kinds
    assert not [e for e in ledger(root) if e["type"] == "gate.approved" and "/" in e["subject"]]
    assert compared["selected"] is None and compared["condition"] == "waiting"


def test_writes_outside_its_own_worktree_never_land_and_the_tests_stay_frozen(cheated):
    root, compared = cheated
    said = _turn_output(root, "cheat-reach")
    wrote = [line for line in said.splitlines() if line.startswith("wrote ")]
    assert not [line for line in wrote if "/honest/" in line or "ledger.jsonl" in line], wrote
    assert any("could not write" in line and "/honest/" in line for line in said.splitlines())
    rows = {r["name"]: r for r in compared["approaches"]}
    # Its edit of the shared RED test was reverted and failed every attempt it made.
    assert rows["cheat-reach"]["outcome"] == "cycles-spent"
    assert rows["cheat-reach"]["violations"] >= 1
    violations = {
        e["data"]["path"]
        for e in ledger(root)
        if e["type"] == "violation.recorded" and e["subject"] == SUBJECT
    }
    assert "tests/test_skus.py" in violations
    # The honest approach worked alone: no planted file, no violation, a pass at once.
    assert rows["honest"]["outcome"] == "passed" and rows["honest"]["cycles"] == 1
    assert rows["honest"]["violations"] == 0
    honest_commit = next(
        e["data"]["commit"]
        for e in ledger(root)
        if e["type"] == "experiment.approach-ended" and e["data"]["approach"] == "honest"
    )
    files = git(root, "ls-tree", "-r", "--name-only", honest_commit).split()
    assert "app/CHEAT.py" not in files
    honest_tree = root / ".consort" / "worktrees" / "_experiments" / f"{SUBJECT}-1" / "honest"
    assert not (honest_tree / "app" / "CHEAT.py").exists()
    # The ledger is Consort's alone: its chain holds, with no line of the agent's.
    assert "# CHEAT" not in (root / ".consort" / "ledger.jsonl").read_text()
    red = next(e for e in ledger(root) if e["type"] == "red.verified")["data"]["commit"]
    for row in compared["approaches"]:
        branch = row["branch"]
        changed = git(root, "diff", "--name-only", red, branch, "--", "tests")
        assert changed == "", f"{branch} changed the frozen tests: {changed}"
    assert consort("verify", cwd=root).returncode == 0
