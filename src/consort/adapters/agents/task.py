"""What a turn asks of an agent (task.json), and the folder that keeps the turn's record.

Each turn lives in `.consort/turns/<NNNN>-<role>-<step>/`:

- `task.json`   the `Task`, written by Consort before the agent starts (the agent protocol);
- `stdout`, `stderr`   everything the agent printed;
- `result.json`  the `TurnResult`, written by Consort after checking the turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from consort.adapters.scope import FileChange, Violation, WriteScope, relative_posix
from consort.core.errors import ConsortError
from consort.core.fsutil import atomic_write_json, atomic_write_text, file_lock
from consort.core.layout import Layout
from consort.core.vocabulary import Role, SandboxUse, Step

TASK_VERSION = 1
TASK_FILE = "task.json"
STDOUT_FILE = "stdout"
STDERR_FILE = "stderr"
RESULT_FILE = "result.json"

_TURN_NUMBER = re.compile(r"^\d{4,}$")


def _check_segment(value: str, what: str) -> str:
    """Ids become folder names (turn folders, replay keys): one plain path segment each."""
    if not value or value in {".", ".."} or "/" in value or "\\" in value or "\0" in value:
        raise ValueError(f"{what} {value!r} must be a non-empty name without '/'")
    return value


class Task(BaseModel):
    """task.json: everything an agent needs for one turn, and nothing else (the agent protocol)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = 1
    turn: str = Field(pattern=_TURN_NUMBER.pattern)
    role: Role
    step: Step
    attempt: int = Field(ge=1)
    feature: str
    story: str | None
    item: str | None
    instructions: str
    inputs: dict[str, Path]  # name -> absolute path the agent may read
    outputs: dict[str, Path]  # name -> absolute path the agent must write
    writable: tuple[str, ...]  # globs relative to the working tree
    protected: tuple[str, ...]
    feedback: str | None  # the failure of the previous attempt, or None

    @field_validator("feature")
    @classmethod
    def _feature_is_a_name(cls, value: str) -> str:
        return _check_segment(value, "feature")

    @field_validator("story", "item")
    @classmethod
    def _ids_are_names(cls, value: str | None) -> str | None:
        return None if value is None else _check_segment(value, "story/item id")

    @field_validator("inputs", "outputs")
    @classmethod
    def _absolute_paths(cls, value: dict[str, Path]) -> dict[str, Path]:
        for name, path in value.items():
            # Output names are file names in a replay recording (outputs/<name>).
            _check_segment(name, "artifact name")
            if not path.is_absolute():
                raise ValueError(f"path of {name!r} must be absolute, got {str(path)!r}")
        return value

    @model_validator(mode="after")
    def _build_turns_name_their_item(self) -> Task:
        if self.step.is_build and (self.story is None or self.item is None):
            raise ValueError(f"a {self.step} turn needs a story and an item")
        return self

    def to_json(self) -> str:
        """The canonical task.json text: the fields in the order the protocol documents."""
        return json.dumps(self.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"

    def write(self, path: Path) -> None:
        atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: Path) -> Task:
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConsortError(f"task file {path} not found") from exc
        except ValidationError as exc:
            raise ConsortError(f"task file {path} is invalid: {_problems(exc)}") from exc

    def write_scope(self, tree: Path) -> WriteScope:
        """The turn's scope in `tree`: its globs, plus its outputs that lie inside the tree."""
        outputs = (relative_posix(path, tree) for path in self.outputs.values())
        return WriteScope(
            self.writable, self.protected, frozenset(p for p in outputs if p is not None)
        )


class RefusedCall(BaseModel):
    """A tool call Consort's guard refused before it ran (as the agent's CLI reported it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str  # Write, Bash, apply_patch, ...
    target: str  # the path, or the command
    reason: str  # what the guard said


class AgentReport(BaseModel):
    """Which agent ran a turn, and what its adapter saw of it (the agent's say-so is agent.json;
    this is what a person needs beside Consort's own checks)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    adapter: str  # command | replay | claude | codex
    program: str | None = None  # "Claude Code", "Codex", or the command's program
    version: str | None = None  # what the CLI says of its version
    guard: str | None = None  # how protected writes were stopped before they happened
    refused: tuple[RefusedCall, ...] = ()


class TurnResult(BaseModel):
    """result.json: what Consort observed and checked about a turn (never the agent's say-so)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    exit_code: int
    duration_s: float
    killed_for_inactivity: bool = False
    killed_for_wall_clock: bool = False
    error: str | None = None  # why the agent could not run at all, if it could not
    sandbox: SandboxUse | None = None  # how it ran (None in results written before sandboxes)
    changed_files: tuple[FileChange, ...] = ()
    violations: tuple[Violation, ...] = ()
    agent: AgentReport | None = None

    @property
    def ok(self) -> bool:
        return (
            self.exit_code == 0
            and not (self.killed_for_inactivity or self.killed_for_wall_clock)
            and self.error is None
            and not self.violations
        )


@dataclass(frozen=True)
class TurnDir:
    """`.consort/turns/<NNNN>-<role>-<step>/`: one turn's task, output and result."""

    path: Path
    number: str  # "0007"
    role: Role
    step: Step

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def task_path(self) -> Path:
        return self.path / TASK_FILE

    @property
    def stdout_path(self) -> Path:
        return self.path / STDOUT_FILE

    @property
    def stderr_path(self) -> Path:
        return self.path / STDERR_FILE

    @property
    def result_path(self) -> Path:
        return self.path / RESULT_FILE

    @staticmethod
    def folder_name(number: int | str, role: Role, step: Step) -> str:
        return f"{int(number):04d}-{role}-{step}"

    @classmethod
    def allocate(cls, state_dir: Path, role: Role, step: Step) -> TurnDir:
        """Create the folder of the next turn: one more than the highest existing number.

        The lock keeps two processes from taking the same number under different role/step
        names; creating the folder with exist_ok=False makes taking a name atomic regardless.
        """
        turns = Layout(state_dir).turns
        turns.mkdir(parents=True, exist_ok=True)
        with file_lock(turns / ".lock"):
            number = max((turn_number(p.name) or 0 for p in turns.iterdir()), default=0) + 1
            while True:
                path = turns / cls.folder_name(number, role, step)
                try:
                    path.mkdir()
                except FileExistsError:
                    number += 1
                    continue
                return cls(path, f"{number:04d}", role, step)

    @classmethod
    def open(cls, path: Path) -> TurnDir:
        """An existing turn folder, its number, role and step read from its name."""
        parsed = parse_turn_name(path.name)
        if parsed is None or not path.is_dir():
            raise ConsortError(f"{path} is not a turn folder (<NNNN>-<role>-<step>)")
        return cls(path, *parsed)

    def write_task(self, task: Task) -> None:
        if (task.turn, task.role, task.step) != (self.number, self.role, self.step):
            raise ValueError(f"task {task.turn}-{task.role}-{task.step} does not belong in {self}")
        task.write(self.task_path)

    def read_task(self) -> Task:
        return Task.load(self.task_path)

    def write_result(self, result: TurnResult) -> None:
        atomic_write_json(self.result_path, result.model_dump(mode="json"))

    def read_result(self) -> TurnResult | None:
        try:
            return TurnResult.model_validate_json(self.result_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValidationError as exc:
            raise ConsortError(f"{self.result_path} is invalid: {_problems(exc)}") from exc


def turn_number(name: str) -> int | None:
    head = name.split("-", 1)[0]
    return int(head) if _TURN_NUMBER.match(head) and "-" in name else None


def parse_turn_name(name: str) -> tuple[str, Role, Step] | None:
    """("0007", Role.DRIVER, Step.GREEN) from "0007-driver-green"; None for anything else."""
    head, _, rest = name.partition("-")
    if not _TURN_NUMBER.match(head):
        return None
    for role in Role:
        if rest.startswith(f"{role}-"):
            step = rest.removeprefix(f"{role}-")
            if step in Step.__members__.values():
                return head, role, Step(step)
    return None


def list_turns(state_dir: Path) -> list[TurnDir]:
    """Every turn folder, in turn order."""
    turns = Layout(state_dir).turns
    if not turns.is_dir():
        return []
    found = [
        TurnDir(path, *parsed)
        for path in turns.iterdir()
        if path.is_dir() and (parsed := parse_turn_name(path.name)) is not None
    ]
    return sorted(found, key=lambda turn: (int(turn.number), turn.name))


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in exc.errors()
    )
