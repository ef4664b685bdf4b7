"""Fake `claude` and `codex` executables that speak the tools' documented output formats.

Each reads a scenario (a JSON file named by FAKE_CLAUDE_SCENARIO / FAKE_CODEX_SCENARIO) listing
what it does, step by step: emit messages, call tools (running the PreToolUse hooks it was given,
and honouring exit code 2 by not acting), print malformed lines, hang, crash, fail. A scenario
with `"attempts": [...]` plays its attempts in turn, one per invocation (a counter file beside
the scenario keeps count), for transient-error-then-success runs. Every invocation appends its
argv, cwd and protocol variables to FAKE_*_LOG (JSON lines).

`install_fakes(folder)` puts `claude` and `codex` launchers in `folder` that run the fakes with
the test's own Python, so that they work whatever `python3` is on PATH.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from consort.adapters.agents.base import build_agent_env
from consort.adapters.agents.task import Task, TurnDir
from consort.core.vocabulary import Role, Step

FAKES = Path(__file__).resolve().parent


def install_fakes(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("claude", "codex"):
        launcher = folder / name
        script = shlex.quote(str(FAKES / name))
        launcher.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {script} "$@"\n')
        launcher.chmod(0o755)
    return folder


def write_scenario(path: Path, **content: Any) -> Path:
    path.write_text(json.dumps(content))
    return path


def invocations(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


class FakeTurn:
    """A working tree with tests/ and src/, one allocated driver turn and its task.json, and the
    agent environment with the fakes first on PATH."""

    def __init__(
        self,
        root: Path,
        *,
        role: Role = Role.DRIVER,
        step: Step = Step.GREEN,
        protected: tuple[str, ...] = ("tests/**", "**/conftest.py"),
        writable: tuple[str, ...] = ("src/**",),
        database_url: str | None = None,
        output_outside: bool = False,
    ) -> None:
        self.root = root
        self.tree = root / "tree"
        (self.tree / "tests").mkdir(parents=True)
        (self.tree / "src").mkdir()
        self.test_file = self.tree / "tests" / "test_stock.py"
        self.test_file.write_text("def test_stock():\n    assert False\n")
        state = (root / "project" / ".consort") if output_outside else (self.tree / ".consort")
        self.dir = TurnDir.allocate(state, role, step)
        self.output = self.dir.path / "outputs" / "notes.json"
        self.task = Task(
            turn=self.dir.number,
            role=role,
            step=step,
            attempt=1,
            feature="F1",
            story="S1",
            item="T1",
            instructions="Make T1 pass.",
            inputs={"test": self.test_file},
            outputs={"notes": self.output},
            writable=writable,
            protected=protected,
            feedback=None,
        )
        self.dir.write_task(self.task)
        self.bin = install_fakes(root / "bin")
        env = build_agent_env(self.dir.task_path, role, step, database_url)
        self.env = {**env, "PATH": f"{self.bin}{os.pathsep}{env['PATH']}"}
        self.claude_log = root / "claude.log"
        self.codex_log = root / "codex.log"
        self.env["FAKE_CLAUDE_LOG"] = str(self.claude_log)
        self.env["FAKE_CODEX_LOG"] = str(self.codex_log)

    def scenario(self, tool: str, **content: Any) -> None:
        path = write_scenario(self.root / f"{tool}-scenario.json", **content)
        self.env[f"FAKE_{tool.upper()}_SCENARIO"] = str(path)

    def record(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.dir.path / "agent.json").read_text())
        return data
