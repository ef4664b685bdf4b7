"""The replay adapter: recorded turns served from a folder, keyed by feature, story, item,
step and attempt."""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from consort.adapters.agents.replay import ReplayAdapter, replay_key
from consort.adapters.agents.task import Task, TurnDir
from consort.core.vocabulary import Role, Step


def make_task(tmp_path: Path, **changes: Any) -> Task:
    fields: dict[str, Any] = {
        "turn": "0001",
        "role": Role.SPEC_AUTHOR,
        "step": Step.SPEC,
        "attempt": 1,
        "feature": "F1-stock",
        "story": None,
        "item": None,
        "instructions": "write the spec",
        "inputs": {},
        "outputs": {"feature-spec": tmp_path / "tree/.consort/features/F1-stock/spec.json"},
        "writable": ("docs/**",),
        "protected": (),
        "feedback": None,
    }
    fields.update(changes)
    return Task(**fields)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    work = tmp_path / "tree"
    work.mkdir()
    return work


def run(recording: Path, task: Task, tree: Path) -> Any:
    turn = TurnDir.allocate(tree / ".consort", task.role, task.step)
    return ReplayAdapter(recording).run(task, turn, tree, {})


def test_keys_for_design_and_build_turns(tmp_path: Path) -> None:
    assert replay_key(make_task(tmp_path)) == PurePosixPath("F1-stock/spec")
    build = make_task(
        tmp_path, role=Role.DRIVER, step=Step.GREEN, story="S1-file", item="T3", attempt=2
    )
    assert replay_key(build) == PurePosixPath("F1-stock/S1-file/T3/green/2")


def test_design_turn_serves_files_outputs_and_deletions(tmp_path: Path, tree: Path) -> None:
    recording = tmp_path / "rec"
    turn_folder = recording / "F1-stock" / "spec"
    (turn_folder / "files" / "docs" / "deep").mkdir(parents=True)
    (turn_folder / "files" / "docs" / "deep" / "notes.md").write_text("# Notes\n")
    (turn_folder / "outputs").mkdir()
    (turn_folder / "outputs" / "feature-spec").write_text('{"id": "F1-stock"}')
    (turn_folder / "delete.json").write_text(json.dumps(["old.txt", "olddir", "never-was.txt"]))
    (turn_folder / "stdout").write_text("recorded stdout\n")
    (tree / "old.txt").write_text("old")
    (tree / "olddir").mkdir()
    (tree / "olddir" / "x").write_text("x")
    (tree / "kept.txt").write_text("kept")

    outcome = run(recording, make_task(tmp_path), tree)

    assert outcome.ok
    assert outcome.exit_code == 0
    assert (tree / "docs/deep/notes.md").read_text() == "# Notes\n"
    assert (tree / ".consort/features/F1-stock/spec.json").read_text() == '{"id": "F1-stock"}'
    assert not (tree / "old.txt").exists()
    assert not (tree / "olddir").exists()
    assert (tree / "kept.txt").read_text() == "kept"
    assert outcome.stdout_path.read_text() == "recorded stdout\n"
    assert outcome.stderr_path.read_text() == ""


def test_build_turn_is_found_by_attempt_and_replays_its_exit_code(
    tmp_path: Path, tree: Path
) -> None:
    recording = tmp_path / "rec"
    for attempt, code, body in ((1, "1", "broken\n"), (2, "0", "fixed\n")):
        folder = recording / "F1-stock" / "S1-file" / "T3" / "green" / str(attempt)
        (folder / "files" / "src").mkdir(parents=True)
        (folder / "files" / "src" / "app.py").write_text(body)
        (folder / "exit_code").write_text(code)
    build = {
        "role": Role.DRIVER,
        "step": Step.GREEN,
        "story": "S1-file",
        "item": "T3",
        "outputs": {},
    }

    first = run(recording, make_task(tmp_path, attempt=1, **build), tree)
    assert first.exit_code == 1
    assert first.error is None  # a recorded failure, not a broken recording
    assert (tree / "src/app.py").read_text() == "broken\n"
    second = run(recording, make_task(tmp_path, attempt=2, **build), tree)
    assert second.ok
    assert (tree / "src/app.py").read_text() == "fixed\n"


def test_a_missing_key_fails_the_turn_naming_the_key_and_the_folder(
    tmp_path: Path, tree: Path
) -> None:
    recording = tmp_path / "rec"
    recording.mkdir()
    (tree / "untouched.txt").write_text("same")
    task = make_task(tmp_path, role=Role.DRIVER, step=Step.GREEN, story="S1", item="T3")
    outcome = run(recording, task, tree)
    assert not outcome.ok
    assert outcome.exit_code == 1
    assert outcome.error is not None
    assert "F1-stock/S1/T3/green/1" in outcome.error
    assert str(recording) in outcome.error
    assert "F1-stock/S1/T3/green/1" in outcome.stderr_path.read_text()
    assert sorted(p.name for p in tree.iterdir()) == [".consort", "untouched.txt"]


def test_a_recorded_output_the_task_does_not_ask_for_fails(tmp_path: Path, tree: Path) -> None:
    folder = tmp_path / "rec" / "F1-stock" / "spec" / "outputs"
    folder.mkdir(parents=True)
    (folder / "architecture").write_text("{}")
    outcome = run(tmp_path / "rec", make_task(tmp_path), tree)
    assert outcome.error is not None
    assert "'architecture' " in outcome.error
    assert "feature-spec" in outcome.error


@pytest.mark.parametrize(
    "deletions", [["../outside.txt"], ["/etc/passwd"], ["."], [""], {"not": "a list"}, [1]]
)
def test_deletions_must_stay_inside_the_tree(tmp_path: Path, tree: Path, deletions: object) -> None:
    folder = tmp_path / "rec" / "F1-stock" / "spec"
    folder.mkdir(parents=True)
    (folder / "delete.json").write_text(json.dumps(deletions))
    (tmp_path / "outside.txt").write_text("safe")
    outcome = run(tmp_path / "rec", make_task(tmp_path), tree)
    assert outcome.error is not None
    assert "delete.json" in outcome.error or "working tree" in outcome.error
    assert (tmp_path / "outside.txt").read_text() == "safe"


def test_files_are_never_written_through_a_link_out_of_the_tree(tmp_path: Path, tree: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, tree / "link")
    files = tmp_path / "rec" / "F1-stock" / "spec" / "files" / "link"
    files.mkdir(parents=True)
    (files / "evil.txt").write_text("evil")
    outcome = run(tmp_path / "rec", make_task(tmp_path), tree)
    assert outcome.error is not None and "outside the working tree" in outcome.error
    assert not (outside / "evil.txt").exists()


def test_an_unreadable_exit_code_is_a_broken_recording(tmp_path: Path, tree: Path) -> None:
    folder = tmp_path / "rec" / "F1-stock" / "spec"
    folder.mkdir(parents=True)
    (folder / "exit_code").write_text("zero")
    outcome = run(tmp_path / "rec", make_task(tmp_path), tree)
    assert outcome.error is not None and "integer exit code" in outcome.error


def test_byte_code_caches_in_an_installed_playbook_are_not_served(
    tmp_path: Path, tree: Path
) -> None:
    # pip compiles every `.py` it installs, the playbook's recorded files among them.
    turn_folder = tmp_path / "rec" / "F1-stock" / "spec"
    (turn_folder / "files" / "src" / "__pycache__").mkdir(parents=True)
    (turn_folder / "files" / "src" / "app.py").write_text("print('hi')\n")
    (turn_folder / "files" / "src" / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\xa7\r")
    (turn_folder / "files" / "src" / "stray.pyc").write_bytes(b"\xa7\r")

    assert run(tmp_path / "rec", make_task(tmp_path), tree).ok

    assert (tree / "src" / "app.py").is_file()
    assert not (tree / "src" / "__pycache__").exists()
    assert not (tree / "src" / "stray.pyc").exists()
