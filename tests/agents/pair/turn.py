"""What every pair's turn does alike: design turns copy the fixture artifacts, RED writes the
kind's test and hands back its cycle plan, GREEN and repair leave the code to the kind, and the
review approves."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
from dataclasses import dataclass
from types import ModuleType

DESIGN_STEPS = ("spec", "architecture", "db-design", "test-list", "ux")


@dataclass(frozen=True)
class Turn:
    task: dict
    step: str
    item: str  # "t1", "t2", ... ("" in design turns)
    option: str | None  # the kind's OPTION argument


@dataclass(frozen=True)
class RedTest:
    """The failing test RED writes, and what its plan declares."""

    path: str  # repository path of the test file
    source: str
    name: str  # the test id after `path::`, as the runner's JUnit report gives it
    expected_failure: dict


def write(path: str | pathlib.Path, text: str) -> None:
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def play(kind: ModuleType, args: list[str]) -> None:
    """One turn of the pair `kind` (a module with `red(turn) -> RedTest` and `green(turn)`)."""
    fixtures = pathlib.Path(args[0])
    task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text())
    turn = Turn(task, task["step"], (task.get("item") or "").lower(), (args[1:] or [None])[0])
    if turn.step in DESIGN_STEPS:
        for name, out in task["outputs"].items():
            shutil.copy(fixtures / f"{name}.json", out)
    elif turn.step == "red":
        test = kind.red(turn)
        write(test.path, test.source)
        plan = {
            "test_files": [test.path],
            "test_ids": [f"{test.path}::{test.name}"],
            "expected_failure": test.expected_failure,
        }
        pathlib.Path(task["outputs"]["cycle-plan"]).write_text(json.dumps(plan))
    elif turn.step in ("green", "repair"):
        kind.green(turn)
    elif turn.step == "review":
        pathlib.Path(task["outputs"]["review"]).write_text(
            json.dumps({"verdict": "approve", "reasons": []})
        )
