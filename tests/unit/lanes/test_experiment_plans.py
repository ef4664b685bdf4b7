"""An experiment's plan: each approach's driver over [agents.driver], its budget, and how many
run at once (one at a time where a turn would run unsandboxed)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from consort.core.config import Config
from consort.core.errors import UsageError
from consort.lanes.experiments import concurrency, plan_approaches

PYTHON = [sys.executable, "-c", "pass"]


def _project(tmp_path: Path, raw: dict[str, object]) -> SimpleNamespace:
    return SimpleNamespace(config=Config.model_validate(raw), root=tmp_path, env_file_name=".env")


def test_approach_tables_override_the_driver_and_the_rest_get_names(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        {
            "agents": {
                "default": "command",
                "command": PYTHON,
                "sandbox": "off",
                "driver": {"adapter": "command", "command": PYTHON, "model": "base"},
            },
            "experiment": {
                "max_cycles": 4,
                "wall_time": 900,
                "approaches": {
                    "lean": {"model": "small", "notes": "keep it small", "max_cycles": 2},
                    "wide": {"command": [sys.executable, "-c", "print(1)"], "wall_time": 60},
                },
            },
        },
    )
    plans = plan_approaches(project, 3)  # type: ignore[arg-type]
    assert [p.name for p in plans] == ["lean", "wide", "a1"]
    lean, wide, plain = plans
    assert lean.settings.model == "small" and lean.notes == "keep it small"
    assert (lean.max_cycles, lean.wall_time_s) == (2, 900)
    assert wide.settings.command == (sys.executable, "-c", "print(1)")
    assert wide.settings.model == "base" and (wide.max_cycles, wide.wall_time_s) == (4, 60)
    assert wide.settings.wall_clock_timeout_s <= 60  # a turn never outlasts its budget
    assert plain.settings.model == "base" and plain.notes == ""


def test_unsandboxed_turns_run_one_at_a_time(tmp_path: Path) -> None:
    raw = {
        "agents": {"default": "command", "command": PYTHON, "sandbox": "off"},
        "experiment": {"concurrency": 3},
    }
    project = _project(tmp_path, raw)
    plans = plan_approaches(project, 3)  # type: ignore[arg-type]
    running, note = concurrency(project, plans)  # type: ignore[arg-type]
    assert running == 1
    assert "unsandboxed" in note


def test_replayed_turns_may_run_at_once(tmp_path: Path) -> None:
    raw = {
        "agents": {"default": "replay", "dir": str(tmp_path)},
        "experiment": {"concurrency": 2},
    }
    project = _project(tmp_path, raw)
    plans = plan_approaches(project, 3)  # type: ignore[arg-type]
    assert concurrency(project, plans) == (2, "")  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [0, 1, 9])
def test_an_experiment_races_two_to_eight_approaches(tmp_path: Path, count: int) -> None:
    project = _project(tmp_path, {"agents": {"default": "replay", "dir": str(tmp_path)}})
    with pytest.raises(UsageError, match="2 to 8"):
        plan_approaches(project, count)  # type: ignore[arg-type]


def test_approach_names_are_checked(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="approach name"):
        Config.model_validate({"experiment": {"approaches": {"Bad Name": {}}}})
