"""Consort's `codex` adapter driving the real Codex CLI against a scripted model.

The model's answers are `custom_tool_call` apply_patch and `function_call` exec_command /
write_stdin items; Codex carries them out for real in its own sandbox, with Consort's guard as
its PreToolUse hook, in a turn laid out as a build turn is.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from consort.adapters.agents.base import TurnOutcome
from consort.adapters.agents.codex import CodexAdapter, detect_features
from consort.adapters.agents.command import Limits
from consort.adapters.agents.headless import RetryPolicy
from tests.e2e.real_agents import CODEX_VERSION, RealTurn, cli
from tests.e2e.scripted_model import (
    Answer,
    Call,
    Conversation,
    Custom,
    Fail,
    Say,
    Script,
    ScriptedModel,
)

LIMITS = Limits(inactivity_s=300, wall_clock_s=900, grace_s=5)
NO_RETRY = RetryPolicy(retries=0)


@pytest.fixture
def codex() -> Path:
    return cli("codex")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    server = ScriptedModel(Script([])).start()
    yield server
    server.stop()


def run(turn: RealTurn, codex: Path, **overrides: object) -> TurnOutcome:
    settings: dict[str, object] = {"command": (str(codex),), "limits": LIMITS, "retry": NO_RETRY}
    settings.update(overrides)
    adapter = CodexAdapter(**settings)  # type: ignore[arg-type]
    return adapter.run(turn.task, turn.dir, turn.tree, turn.env)


def patch(*lines: str) -> Custom:
    return Custom("apply_patch", "\n".join(["*** Begin Patch", *lines, "*** End Patch", ""]))


def shell(command: str, **extra: object) -> Call:
    return Call("exec_command", {"cmd": command, **extra})


def test_the_pinned_version_is_the_one_installed(codex: Path) -> None:
    out = subprocess.run([str(codex), "--version"], capture_output=True, text=True, check=True)
    assert CODEX_VERSION in out.stdout


def test_the_guard_runs_on_this_version(codex: Path, tmp_path: Path) -> None:
    turn = RealTurn(tmp_path, "http://127.0.0.1:9")
    features = detect_features((str(codex),), turn.env)
    assert features.hooks and features.hook_trust_flag, features


def test_a_build_turn_patches_and_runs_commands_in_a_story_worktree_under_consort(
    tmp_path: Path, codex: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    model.brain = Script(
        [
            [Say("Adding the code."), patch("*** Add File: src/app.py", "+A = 1")],
            [patch("*** Update File: src/stock.py", "@@", "-STOCK = 0", "+STOCK = 1")],
            [shell("echo 'B = 2' >> src/app.py")],
            [patch(f"*** Add File: {turn.output}", '+{"ok": true}')],
        ]
    )
    outcome = run(turn, codex)

    assert outcome.ok, turn.stderr()
    assert (turn.tree / "src" / "app.py").read_text() == "A = 1\nB = 2\n"
    assert (turn.tree / "src" / "stock.py").read_text() == "STOCK = 1\n"
    assert turn.output.read_text().strip() == '{"ok": true}'
    record = turn.record()
    assert record["status"] == "ok"
    assert record["refused"] == []
    paths = [(e["path"], e["status"]) for e in record["edits"]]
    assert ("src/app.py", "done") in paths and ("src/stock.py", "done") in paths
    assert "hook" in record["guard"] and "post-turn" in record["guard"]


def test_protected_writes_are_refused_by_the_hook_and_recorded(
    tmp_path: Path, codex: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    before = turn.test_file.read_text()
    model.brain = Script(
        [
            [patch("*** Update File: tests/test_stock.py", "@@", "-    assert False", "+    pass")],
            [shell("rm -f tests/test_stock.py")],
            [patch("*** Add File: tests/conftest.py", "+import pytest")],
        ]
    )
    outcome = run(turn, codex)

    assert outcome.ok, turn.stderr()
    assert turn.test_file.read_text() == before
    assert not (turn.tree / "tests" / "conftest.py").exists()
    refused = turn.record()["refused"]
    assert len(refused) == 3, refused
    assert [r["tool"] for r in refused] == ["apply_patch", "Bash", "apply_patch"]
    assert all("consort guard" in r["reason"] for r in refused)
    assert "tests/test_stock.py" in refused[1]["target"]


def test_an_interactive_shell_fed_through_write_stdin_is_refused(
    tmp_path: Path, codex: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    before = turn.test_file.read_text()

    def brain(conversation: Conversation) -> Answer:
        if conversation.index == 0:
            return [shell("bash", tty=True, yield_time_ms=500)]
        if conversation.index == 1:
            found = re.search(r"session ID (\d+)", conversation.results[-1].text)
            if found is None:  # the shell never started: nothing to write into
                return [Say("No shell.")]
            command = "echo 'def test_stock(): pass' > tests/test_stock.py; exit\n"
            return [Call("write_stdin", {"session_id": int(found.group(1)), "chars": command})]
        return [Say("Done.")]

    model.brain = brain
    outcome = run(turn, codex)

    assert outcome.ok, turn.stderr()
    assert turn.test_file.read_text() == before
    (refusal,) = turn.record()["refused"]
    assert "interactive" in refusal["reason"]


def test_a_guard_that_crashes_blocks_the_call(
    tmp_path: Path, codex: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    model.brain = Script([[patch("*** Add File: src/app.py", "+A = 1")]])
    outcome = run(turn, codex, guard_command=(sys.executable, "-c", "raise SystemExit(1)"))

    assert outcome.ok, turn.stderr()
    assert not (turn.tree / "src" / "app.py").exists()
    assert len(turn.record()["refused"]) == 1


def test_a_failed_turn_says_why_and_warnings_are_not_errors(
    tmp_path: Path, codex: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    model.brain = lambda conversation: Fail(
        400, "The model `gpt-5.5` does not accept this request", "invalid_request_error"
    )
    outcome = run(turn, codex)

    assert not outcome.ok
    record = turn.record()
    assert record["status"] == "failed"
    assert "does not accept this request" in (record["message"] or ""), record["message"]
    assert record["message"] != "an error"
    assert any("hook" in w for w in record["warnings"]), record["warnings"]
    assert outcome.exit_code != 0


def test_a_role_prompt_with_front_matter_is_taken_as_the_prompt(
    tmp_path: Path, codex: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    roles = turn.state / "roles"
    roles.mkdir()
    (roles / "driver.md").write_text("---\nname: driver\n---\n\nYou are the driver.\n")
    model.brain = Script([[Say("Read it.")]])
    outcome = run(turn, codex, project_root=turn.project)

    assert outcome.ok, turn.stderr()
    (first, *_) = model.requests
    assert "You are the driver." in first.prompt


def test_a_write_the_hook_cannot_see_is_reverted_by_the_post_turn_check(
    tmp_path: Path, codex: Path, model: ScriptedModel
) -> None:
    from consort.adapters.scope import revert_outside_scope, snapshot

    turn = RealTurn(tmp_path, model.url)
    before = turn.test_file.read_text()
    base = snapshot(turn.tree)
    sneaky = (
        "python3 -c \"import pathlib; pathlib.Path('te' + 'sts/test_stock.py').write_text('')\""
    )
    model.brain = Script([[shell(sneaky)]])
    outcome = run(turn, codex)

    assert outcome.ok, turn.stderr()
    assert turn.test_file.read_text() == ""  # it got past the hook ...
    violations = revert_outside_scope(turn.tree, base, turn.task.writable, turn.task.protected)
    assert [(v.path, v.rule) for v in violations] == [("tests/test_stock.py", "tests/**")]
    assert turn.test_file.read_text() == before  # ... and the post-turn check put it back
