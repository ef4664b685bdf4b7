"""After `consort init`, the next useful steps: choose the agents, then describe a feature."""

from __future__ import annotations

from pathlib import Path

from consort.app.init import next_steps
from consort.core.config import DEFAULT_CONFIG_TEXT
from consort.core.project import Project


def _project(root: Path, config: str) -> Project:
    (root / "consort.toml").write_text(config)
    return Project(root)


def test_a_new_project_is_told_to_choose_agents_then_describe_a_feature(tmp_path: Path) -> None:
    steps = next_steps(_project(tmp_path, DEFAULT_CONFIG_TEXT))
    assert len(steps) == 2
    assert '[agents] default = "claude"' in steps[0]
    assert steps[1] == "describe what to build: consort intake feature --file request.md"
    assert not any(step.startswith("`consort doctor`") for step in steps)


def test_agents_already_chosen_are_not_asked_for_again(tmp_path: Path) -> None:
    config = '[agents]\ndefault = "command"\ncommand = ["python3", "agent.py"]\n'
    assert next_steps(_project(tmp_path, config)) == [
        "describe what to build: consort intake feature --file request.md"
    ]


def test_a_role_table_with_an_adapter_counts_as_a_choice(tmp_path: Path) -> None:
    config = '[agents.driver]\nadapter = "codex"\n'
    assert len(next_steps(_project(tmp_path, config))) == 1
