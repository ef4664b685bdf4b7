"""The real Claude Code and Codex CLIs, as the end-to-end tests run them.

They are installed from the npm registry at the versions pinned in `tests/e2e/agents/package.json`
(and its lock) by `bash scripts/agent-clis.sh`, which `.ci/run` runs. A test that needs one and
does not find it is skipped on a developer's machine (with the command that installs it) and
fails under CI, where it must be there.

Neither CLI reaches the network: Claude Code is pointed at a `ScriptedModel` with
ANTHROPIC_BASE_URL, Codex through a custom model provider in the `config.toml` of a CODEX_HOME
made for the test. `RealTurn` lays out one turn as the build lane does: the project's state in
`<project>/.consort`, the story's worktree inside it at `.consort/worktrees/F1/S1`, and the turn's
task, inputs and outputs in `.consort/turns/<turn>/`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from consort.adapters.agents.base import build_agent_env
from consort.adapters.agents.task import Task, TurnDir
from consort.core.vocabulary import Role, Step

AGENTS = Path(__file__).resolve().parent / "agents"
BIN = AGENTS / "node_modules" / ".bin"
INSTALL = "bash scripts/agent-clis.sh"
DUMMY_KEY = "sk-scripted-model-not-a-secret"
# A slug Codex knows: for an unknown one it offers no apply_patch tool.
CODEX_MODEL = "gpt-5.5"
CODEX_KEY_VARIABLE = "SCRIPTED_MODEL_KEY"


def pinned_version(package: str) -> str:
    manifest = json.loads((AGENTS / "package.json").read_text())
    version: str = manifest["dependencies"][package]
    return version


CLAUDE_VERSION = pinned_version("@anthropic-ai/claude-code")
CODEX_VERSION = pinned_version("@openai/codex")


def cli(name: str) -> Path:
    """The installed CLI `name` ("claude" or "codex"), or skip (fail under CI)."""
    path = BIN / name
    if path.exists():
        return path
    message = f"the real `{name}` CLI is not installed in {BIN}: run `{INSTALL}`"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def codex_home(folder: Path, base_url: str) -> Path:
    """A CODEX_HOME whose config.toml sends every request to the scripted model."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\n'
        'model_provider = "scripted"\n'
        "[model_providers.scripted]\n"
        'name = "scripted model"\n'
        f'base_url = "{base_url}/v1"\n'
        f'env_key = "{CODEX_KEY_VARIABLE}"\n'
        'wire_api = "responses"\n'
    )
    return folder


def model_environment(root: Path, base_url: str) -> dict[str, str]:
    """What a turn needs to reach the scripted model (on top of the protocol's environment).

    TMPDIR is the test's own: Codex refuses to put its helper links in a CODEX_HOME under the
    temporary folder, and pytest's folders are there.
    """
    temp = root / "tmp"
    temp.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "TMPDIR": str(temp),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(codex_home(root / "codex-home", base_url)),
        CODEX_KEY_VARIABLE: DUMMY_KEY,
    }


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


class RealTurn:
    """One driver turn laid out as the build lane lays it out, ready for a real CLI."""

    def __init__(
        self,
        root: Path,
        base_url: str,
        *,
        role: Role = Role.DRIVER,
        step: Step = Step.GREEN,
        protected: tuple[str, ...] = ("tests/**", "**/conftest.py"),
        writable: tuple[str, ...] = ("src/**",),
    ) -> None:
        self.root = root
        self.project = root / "project"
        self.state = self.project / ".consort"
        self.tree = self.state / "worktrees" / "F1" / "S1"
        (self.tree / "tests").mkdir(parents=True)
        (self.tree / "src").mkdir()
        self.test_file = self.tree / "tests" / "test_stock.py"
        self.test_file.write_text("def test_stock():\n    assert False\n")
        (self.tree / "src" / "stock.py").write_text("STOCK = 0\n")
        git(self.tree, "init", "-q")
        git(self.tree, "add", "-A")
        git(self.tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
        self.dir = TurnDir.allocate(self.state, role, step)
        self.output = self.dir.path / "outputs" / "notes.json"
        self.output.parent.mkdir(parents=True, exist_ok=True)
        self.input = self.dir.path / "design.json"
        self.input.write_text('{"design": "a stock counter"}\n')
        self.task = Task(
            turn=self.dir.number,
            role=role,
            step=step,
            attempt=1,
            feature="F1",
            story="S1",
            item="T1",
            instructions="Make T1 pass.",
            inputs={"design": self.input, "test": self.test_file},
            outputs={"notes": self.output},
            writable=writable,
            protected=protected,
            feedback=None,
        )
        self.dir.write_task(self.task)
        self.parent_env = {**os.environ, **model_environment(root, base_url)}
        allow = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", CODEX_KEY_VARIABLE)
        self.env = build_agent_env(
            self.dir.task_path,
            role,
            step,
            allow=(*allow, "CLAUDE_CONFIG_DIR", "CODEX_HOME"),
            parent=self.parent_env,
        )

    def record(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.dir.path / "agent.json").read_text())
        return data

    def stderr(self) -> str:
        return self.dir.stderr_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.dir.stdout_path.read_text(errors="replace")
