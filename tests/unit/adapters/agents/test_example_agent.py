"""The example agent of docs/agent-protocol.md, run through the command adapter."""

from __future__ import annotations

import sys
from pathlib import Path

from consort.adapters.agents.base import build_agent_env
from consort.adapters.agents.command import CommandAdapter
from consort.adapters.agents.task import Task, TurnDir
from consort.core.vocabulary import Role, Step

AGENT = Path(__file__).resolve().parents[4] / "examples" / "agents" / "echo_agent.py"


def run(tmp_path: Path, outputs: dict[str, Path]) -> tuple[int, str, str]:
    tree = tmp_path / "tree"
    tree.mkdir()
    turn = TurnDir.allocate(tmp_path / ".consort", Role.DRIVER, Step.GREEN)
    task = Task(
        turn=turn.number, role=Role.DRIVER, step=Step.GREEN, attempt=2, feature="F1",
        story="S1", item="T1", instructions="Make T1 pass.", inputs={"test": tree / "t.py"},
        outputs=outputs, writable=("src/**",), protected=("tests/**",),
        feedback="1 failed: test_t",
    )  # fmt: skip
    turn.write_task(task)
    env = build_agent_env(turn.task_path, Role.DRIVER, Step.GREEN, "postgresql://scratch")
    outcome = CommandAdapter((sys.executable, str(AGENT))).run(task, turn, tree, env)
    return outcome.exit_code, turn.stdout_path.read_text(), turn.stderr_path.read_text()


def test_it_reads_the_whole_task_and_finishes(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, {})
    assert code == 0
    assert "turn 0001: driver green for F1/S1/T1, attempt 2" in out
    assert f"working tree: {tmp_path / 'tree'}" in out
    assert "scratch database" in out and "1 failed: test_t" in out


def test_it_fails_the_turn_when_it_leaves_an_output_unwritten(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, {"notes": tmp_path / "notes.json"})
    assert code == 1
    assert "writes none of ['notes']" in err
