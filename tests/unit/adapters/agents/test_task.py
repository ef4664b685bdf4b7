"""task.json, roles and steps, and turn folders."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from consort.adapters.agents.task import Task, TurnDir, TurnResult, list_turns, parse_turn_name
from consort.adapters.scope import Breach, ChangeKind, FileChange, Violation
from consort.core.errors import ConsortError
from consort.core.vocabulary import Role, Step


def build_task(**changes: Any) -> Task:
    fields: dict[str, Any] = {
        "turn": "0007",
        "role": Role.DRIVER,
        "step": Step.GREEN,
        "attempt": 1,
        "feature": "F1-stock-visibility",
        "story": "S1-file-stock",
        "item": "T3",
        "instructions": "make T3 pass",
        "inputs": {"spec": Path("/p/.consort/features/F1/feature-spec.json")},
        "outputs": {"notes": Path("/p/.consort/turns/0007-driver-green/notes.md")},
        "writable": ("src/**", "migrations/**"),
        "protected": ("tests/**",),
        "feedback": None,
    }
    fields.update(changes)
    return Task(**fields)


def test_roles_and_steps_are_the_documented_ones() -> None:
    assert [r.value for r in Role] == [
        "spec-author",
        "architect",
        "dba",
        "test-strategist",
        "ux-designer",
        "navigator",
        "driver",
        "explorer",
    ]
    assert [s.value for s in Step] == [
        "spec",
        "architecture",
        "db-design",
        "test-list",
        "ux",
        "red",
        "green",
        "repair",
        "review",
        "refactor",
        "explore",
    ]
    assert [s for s in Step if s.is_build] == [
        Step.RED,
        Step.GREEN,
        Step.REPAIR,
        Step.REVIEW,
        Step.REFACTOR,
    ]


def test_task_json_has_the_protocol_fields_in_the_protocol_order() -> None:
    data = json.loads(build_task(feedback="T3 failed: KeyError 'sku'").to_json())
    assert list(data) == [
        "version",
        "turn",
        "role",
        "step",
        "attempt",
        "feature",
        "story",
        "item",
        "instructions",
        "inputs",
        "outputs",
        "writable",
        "protected",
        "feedback",
    ]
    assert data == {
        "version": 1,
        "turn": "0007",
        "role": "driver",
        "step": "green",
        "attempt": 1,
        "feature": "F1-stock-visibility",
        "story": "S1-file-stock",
        "item": "T3",
        "instructions": "make T3 pass",
        "inputs": {"spec": "/p/.consort/features/F1/feature-spec.json"},
        "outputs": {"notes": "/p/.consort/turns/0007-driver-green/notes.md"},
        "writable": ["src/**", "migrations/**"],
        "protected": ["tests/**"],
        "feedback": "T3 failed: KeyError 'sku'",
    }


def test_feedback_is_written_as_null_when_there_is_none(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    build_task().write(path)
    assert json.loads(path.read_text())["feedback"] is None
    assert Task.load(path) == build_task()


def test_design_turns_may_have_no_story_or_item() -> None:
    task = build_task(role=Role.SPEC_AUTHOR, step=Step.SPEC, story=None, item=None)
    assert json.loads(task.to_json())["story"] is None


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"story": None}, "needs a story and an item"),
        ({"item": None}, "needs a story and an item"),
        ({"turn": "7"}, "turn"),
        ({"attempt": 0}, "attempt"),
        ({"inputs": {"spec": Path("relative/spec.json")}}, "must be absolute"),
        ({"outputs": {"a/b": Path("/abs")}}, "without '/'"),
        ({"feature": "../escape"}, "without '/'"),
        ({"item": ".."}, "without '/'"),
        ({"version": 2}, "version"),
    ],
)
def test_invalid_tasks_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        build_task(**changes)


def test_loading_a_broken_task_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    path.write_text('{"version": 1}')
    with pytest.raises(ConsortError, match=str(path)):
        Task.load(path)
    with pytest.raises(ConsortError, match="not found"):
        Task.load(tmp_path / "missing.json")


def test_write_scope_turns_outputs_inside_the_tree_into_relative_paths(tmp_path: Path) -> None:
    inside = tmp_path / ".consort" / "features" / "F1" / "feature-spec.json"
    task = build_task(outputs={"spec": inside, "elsewhere": Path("/somewhere/else.json")})
    scope = task.write_scope(tmp_path)
    assert scope.outputs == frozenset({".consort/features/F1/feature-spec.json"})
    assert scope.writable == ("src/**", "migrations/**")
    assert scope.protected == ("tests/**",)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("0007-driver-green", ("0007", Role.DRIVER, Step.GREEN)),
        ("0012-test-strategist-test-list", ("0012", Role.TEST_STRATEGIST, Step.TEST_LIST)),
        ("0001-spec-author-spec", ("0001", Role.SPEC_AUTHOR, Step.SPEC)),
        ("0003-dba-db-design", ("0003", Role.DBA, Step.DB_DESIGN)),
        ("12345-navigator-red", ("12345", Role.NAVIGATOR, Step.RED)),
        ("007-driver-green", None),
        ("0007-pilot-green", None),
        ("0007-driver-flying", None),
        ("0007-driver", None),
        (".lock", None),
    ],
)
def test_turn_folder_names(name: str, expected: tuple[str, Role, Step] | None) -> None:
    assert parse_turn_name(name) == expected


def test_turn_numbers_follow_the_highest_existing_one(tmp_path: Path) -> None:
    first = TurnDir.allocate(tmp_path, Role.SPEC_AUTHOR, Step.SPEC)
    assert first.path == tmp_path / "turns" / "0001-spec-author-spec"
    assert first.path.is_dir()
    second = TurnDir.allocate(tmp_path, Role.ARCHITECT, Step.ARCHITECTURE)
    assert second.number == "0002"
    (tmp_path / "turns" / "0041-driver-green").mkdir()
    (tmp_path / "turns" / "notes").mkdir()  # not a turn: ignored
    third = TurnDir.allocate(tmp_path, Role.DRIVER, Step.REPAIR)
    assert third.name == "0042-driver-repair"
    assert third.task_path == third.path / "task.json"
    assert third.stdout_path.name == "stdout"
    assert third.stderr_path.name == "stderr"
    assert third.result_path.name == "result.json"


def test_concurrent_allocations_never_share_a_number(tmp_path: Path) -> None:
    results: list[TurnDir] = []
    pairs = [(Role.DRIVER, Step.GREEN), (Role.NAVIGATOR, Step.RED), (Role.DBA, Step.DB_DESIGN)]

    def allocate(index: int) -> None:
        role, step = pairs[index % len(pairs)]
        results.append(TurnDir.allocate(tmp_path, role, step))

    threads = [threading.Thread(target=allocate, args=(i,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    numbers = sorted(int(turn.number) for turn in results)
    assert numbers == list(range(1, 31))
    assert [t.number for t in list_turns(tmp_path)] == [f"{n:04d}" for n in range(1, 31)]


def test_list_turns_orders_by_number_not_by_name(tmp_path: Path) -> None:
    for name in (
        "10000-driver-green",
        "9999-driver-red",
        "0010-driver-green",
        "0009-dba-db-design",
    ):
        (tmp_path / "turns" / name).mkdir(parents=True)
    assert [t.name for t in list_turns(tmp_path)] == [
        "0009-dba-db-design",
        "0010-driver-green",
        "9999-driver-red",
        "10000-driver-green",
    ]
    assert list_turns(tmp_path / "nowhere") == []


def test_turn_dir_keeps_its_task_and_result(tmp_path: Path) -> None:
    turn = TurnDir.allocate(tmp_path, Role.DRIVER, Step.GREEN)
    task = build_task(turn=turn.number)
    turn.write_task(task)
    reopened = TurnDir.open(turn.path)
    assert reopened == turn
    assert reopened.read_task() == task
    with pytest.raises(ValueError, match="does not belong"):
        turn.write_task(build_task(turn="0099"))

    assert turn.read_result() is None
    result = TurnResult(
        exit_code=0,
        duration_s=1.5,
        changed_files=(FileChange("src/app.py", ChangeKind.MODIFIED),),
        violations=(Violation("tests/t.py", ChangeKind.MODIFIED, Breach.PROTECTED, "tests/**"),),
    )
    turn.write_result(result)
    assert turn.read_result() == result
    on_disk = json.loads(turn.result_path.read_text())
    assert on_disk["violations"] == [
        {"path": "tests/t.py", "kind": "modified", "breach": "protected", "rule": "tests/**"}
    ]
    assert on_disk["changed_files"] == [{"path": "src/app.py", "kind": "modified"}]
    assert on_disk["killed_for_inactivity"] is False
    assert not result.ok  # a violation fails the turn even when the agent exited 0
    assert TurnResult(exit_code=0, duration_s=0.1).ok


def test_opening_something_that_is_not_a_turn_folder_fails(tmp_path: Path) -> None:
    with pytest.raises(ConsortError, match="not a turn folder"):
        TurnDir.open(tmp_path)
