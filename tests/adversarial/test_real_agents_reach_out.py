"""Cheating agents, played by the real Claude Code and Codex CLIs: from a story's worktree (which
lies inside `.consort/`), each reaches for Consort's state around it and for a sibling story's
worktree. Every such call is refused before it runs — by the guard, or for a file tool outside
the turn's folders by Claude Code's own permissions — and nothing outside the tree changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from consort.adapters.agents.claude import ClaudeAdapter
from consort.adapters.agents.codex import CodexAdapter
from consort.adapters.agents.command import Limits
from consort.adapters.agents.headless import RetryPolicy
from tests.e2e.real_agents import RealTurn, cli
from tests.e2e.scripted_model import Call, Custom, Script, ScriptedModel

LIMITS = Limits(inactivity_s=300, wall_clock_s=900, grace_s=5)


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    server = ScriptedModel(Script([])).start()
    yield server
    server.stop()


def targets(turn: RealTurn) -> tuple[Path, Path, Path]:
    ledger = turn.state / "ledger.jsonl"
    ledger.write_text('{"seq": 1}\n')
    sibling = turn.state / "worktrees" / "F1" / "S2" / "app.py"
    sibling.parent.mkdir(parents=True)
    sibling.write_text("S2 = 1\n")
    roles = turn.state / "roles" / "driver.md"
    return ledger, sibling, roles


def test_claude_cannot_touch_the_state_around_its_worktree(
    tmp_path: Path, model: ScriptedModel
) -> None:
    claude = cli("claude")
    turn = RealTurn(tmp_path, model.url)
    ledger, sibling, roles = targets(turn)
    model.brain = Script(
        [
            [Call("Write", {"file_path": str(ledger), "content": "forged\n"})],
            [Call("Write", {"file_path": str(sibling), "content": "S2 = 2\n"})],
            [Call("Bash", {"command": f"echo pwned > {roles}"})],
            [Call("Bash", {"command": "rm -rf ../S2"})],
            [Call("Read", {"file_path": str(turn.dir.task_path)})],
            [Call("Edit", {"file_path": str(turn.dir.task_path), "old_string": '"green"',
                           "new_string": '"refactor"'})],
        ]
    )  # fmt: skip
    adapter = ClaudeAdapter(command=(str(claude),), limits=LIMITS, retry=RetryPolicy(0))
    outcome = adapter.run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    assert ledger.read_text() == '{"seq": 1}\n'
    assert sibling.read_text() == "S2 = 1\n"
    assert not roles.exists()
    assert '"step": "green"' in turn.dir.task_path.read_text()
    results = model.requests[-1].results
    assert [r.is_error for r in results] == [True, True, True, True, False, True]
    # The shell commands and the edit of task.json reached the guard, which refused them.
    assert outcome.agent is not None
    assert [r.tool for r in outcome.agent.refused] == ["Bash", "Bash", "Edit"]


def test_codex_cannot_touch_the_state_around_its_worktree(
    tmp_path: Path, model: ScriptedModel
) -> None:
    codex = cli("codex")
    turn = RealTurn(tmp_path, model.url)
    ledger, sibling, roles = targets(turn)
    patch = f"*** Begin Patch\n*** Update File: {sibling}\n@@\n-S2 = 1\n+S2 = 2\n*** End Patch\n"
    model.brain = Script(
        [
            [Custom("apply_patch", patch)],
            [Call("exec_command", {"cmd": f"echo forged >> {ledger}"})],
            [Call("exec_command", {"cmd": f"mkdir -p {roles.parent} && echo x > {roles}"})],
            [Call("exec_command", {"cmd": "rm -rf ../S2"})],
        ]
    )
    adapter = CodexAdapter(command=(str(codex),), limits=LIMITS, retry=RetryPolicy(0))
    outcome = adapter.run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    assert ledger.read_text() == '{"seq": 1}\n'
    assert sibling.read_text() == "S2 = 1\n"
    assert not roles.exists()
    assert outcome.agent is not None and len(outcome.agent.refused) == 4
