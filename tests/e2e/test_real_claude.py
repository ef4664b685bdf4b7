"""Consort's `claude` adapter driving the real Claude Code CLI against a scripted model.

The model's answers are tool calls (Write, Edit, Read, Bash); the CLI carries them out for real,
with Consort's guard as its real PreToolUse hook, in a turn laid out as a build turn is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from consort.adapters.agents.claude import ClaudeAdapter
from consort.adapters.agents.command import Limits
from consort.adapters.agents.headless import RetryPolicy
from tests.e2e.real_agents import CLAUDE_VERSION, RealTurn, cli
from tests.e2e.scripted_model import Call, Fail, Say, Script, ScriptedModel

# Generous: the real CLI can be slow to start on a loaded machine. Never a timed assertion.
LIMITS = Limits(inactivity_s=300, wall_clock_s=900, grace_s=5)
NO_RETRY = RetryPolicy(retries=0)


@pytest.fixture
def claude() -> Path:
    return cli("claude")


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    server = ScriptedModel(Script([])).start()
    yield server
    server.stop()


def run(turn: RealTurn, claude: Path, **overrides: object) -> object:
    settings: dict[str, object] = {"command": (str(claude),), "limits": LIMITS, "retry": NO_RETRY}
    settings.update(overrides)
    adapter = ClaudeAdapter(**settings)  # type: ignore[arg-type]
    return adapter.run(turn.task, turn.dir, turn.tree, turn.env)


def edits(turn: RealTurn) -> list[tuple[str, str, str]]:
    return [(e["path"], e["tool"], e["status"]) for e in turn.record()["edits"]]


def test_the_pinned_version_is_the_one_installed(claude: Path) -> None:
    import subprocess

    out = subprocess.run([str(claude), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith(CLAUDE_VERSION)


def test_a_build_turn_writes_and_edits_code_in_a_story_worktree_under_consort(
    tmp_path: Path, claude: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    code = turn.tree / "src" / "app.py"
    model.brain = Script(
        [
            [
                Say("Writing the code."),
                Call("Write", {"file_path": str(code), "content": "A = 1\n"}),
            ],
            [Call("Edit", {"file_path": str(code), "old_string": "A = 1", "new_string": "A = 2"})],
            [Call("Bash", {"command": "echo 'B = 3' >> src/app.py"})],
        ]
    )
    outcome = run(turn, claude)

    assert outcome.ok, turn.stderr()  # type: ignore[attr-defined]
    assert code.read_text() == "A = 2\nB = 3\n"
    assert edits(turn) == [("src/app.py", "Write", "done"), ("src/app.py", "Edit", "done")]
    refusals = [r for r in model.requests[-1].results if r.is_error]
    assert refusals == []


def test_a_build_turn_reads_its_task_and_inputs_and_writes_its_output(
    tmp_path: Path, claude: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    model.brain = Script(
        [
            [Call("Read", {"file_path": str(turn.dir.task_path)})],
            [Call("Read", {"file_path": str(turn.input)})],
            [Call("Write", {"file_path": str(turn.output), "content": '{"ok": true}\n'})],
        ]
    )
    outcome = run(turn, claude)

    assert outcome.ok, turn.stderr()  # type: ignore[attr-defined]
    results = list(model.requests[-1].results)
    assert [r.is_error for r in results[:3]] == [False, False, False], results
    assert '"role": "driver"' in results[0].text or "driver" in results[0].text
    assert "a stock counter" in results[1].text
    assert json.loads(turn.output.read_text()) == {"ok": True}


def test_a_protected_test_write_is_refused_by_the_hook_and_recorded(
    tmp_path: Path, claude: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    before = turn.test_file.read_text()
    model.brain = Script(
        [
            [
                Call(
                    "Write",
                    {"file_path": str(turn.test_file), "content": "def test_stock(): pass\n"},
                )
            ],
            [Call("Bash", {"command": "rm -f tests/test_stock.py"})],
        ]
    )
    outcome = run(turn, claude)

    assert outcome.ok, turn.stderr()  # type: ignore[attr-defined]
    assert turn.test_file.read_text() == before
    results = list(model.requests[-1].results)
    assert len(results) == 2 and all(r.is_error for r in results), results
    assert all("consort guard" in r.text and "tests/**" in r.text for r in results)
    assert edits(turn) == [("tests/test_stock.py", "Write", "refused")]


def test_a_guard_that_crashes_blocks_the_call(
    tmp_path: Path, claude: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    code = turn.tree / "src" / "app.py"
    model.brain = Script([[Call("Write", {"file_path": str(code), "content": "A = 1\n"})]])
    crash = (sys.executable, "-c", "raise SystemExit(1)")
    outcome = run(turn, claude, guard_command=crash)

    assert outcome.ok, turn.stderr()  # type: ignore[attr-defined]
    assert not code.exists()
    (result,) = list(model.requests[-1].results)
    assert result.is_error


def test_a_rejected_login_ends_the_turn_without_minutes_of_retries(
    tmp_path: Path, claude: Path, model: ScriptedModel
) -> None:
    from consort.core.errors import UsageError

    turn = RealTurn(tmp_path, model.url)
    model.brain = lambda conversation: Fail(401, "invalid x-api-key", "authentication_error")
    with pytest.raises(UsageError, match="not logged in"):
        run(turn, claude)
    # Bounded by count, not by time: the CLI asked at most a few times before giving up.
    assert 1 <= len(model.requests) <= 3, len(model.requests)
    assert turn.record()["status"] == "login-needed"


def test_every_tool_the_role_subagents_name_exists_in_this_version(
    tmp_path: Path, claude: Path, model: ScriptedModel
) -> None:
    from consort.adapters.agents.claude_files import subagent_tools

    turn = RealTurn(tmp_path, model.url)
    model.brain = Script([[Say("Nothing to do.")]])
    outcome = run(turn, claude)

    assert outcome.ok, turn.stderr()  # type: ignore[attr-defined]
    init = next(
        json.loads(line)
        for line in turn.stdout().splitlines()
        if '"subtype":"init"' in line.replace(" ", "")
    )
    missing = subagent_tools() - set(init["tools"])
    assert missing == set(), f"{missing} are not tools of Claude Code {CLAUDE_VERSION}"


def test_doctor_asks_the_cli_about_the_login_a_turn_will_have(
    tmp_path: Path, claude: Path, model: ScriptedModel
) -> None:
    from consort.adapters.agents.claude import login_status

    turn = RealTurn(tmp_path, model.url)
    mine = dict(turn.parent_env)  # ANTHROPIC_API_KEY is set here ...
    without_key = {k: v for k, v in turn.env.items() if k != "ANTHROPIC_API_KEY"}
    text, logged_in = login_status(str(claude), mine, without_key)  # ... but not let through
    assert logged_in is False
    assert 'env_allow = ["ANTHROPIC_API_KEY"]' in text
    text, logged_in = login_status(str(claude), mine, turn.env)
    assert logged_in is True and "api_key" in text


def test_a_write_the_hook_cannot_see_is_reverted_by_the_post_turn_check(
    tmp_path: Path, claude: Path, model: ScriptedModel
) -> None:
    from consort.adapters.scope import revert_outside_scope, snapshot

    turn = RealTurn(tmp_path, model.url)
    before = turn.test_file.read_text()
    base = snapshot(turn.tree)
    # A path computed at run time: no guard reading the command line can know it.
    sneaky = (
        "python3 -c \"import pathlib; pathlib.Path('te' + 'sts/test_stock.py').write_text('')\""
    )
    model.brain = Script([[Call("Bash", {"command": sneaky})]])
    outcome = run(turn, claude)

    assert outcome.ok, turn.stderr()  # type: ignore[attr-defined]
    assert turn.test_file.read_text() == ""  # it got past the hook ...
    violations = revert_outside_scope(turn.tree, base, turn.task.writable, turn.task.protected)
    assert [(v.path, v.rule) for v in violations] == [("tests/test_stock.py", "tests/**")]
    assert turn.test_file.read_text() == before  # ... and the post-turn check put it back


def test_the_users_api_key_helper_logs_the_turn_in(
    tmp_path: Path, claude: Path, model: ScriptedModel
) -> None:
    turn = RealTurn(tmp_path, model.url)
    config = Path(turn.env["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    helper = "echo sk-from-the-users-helper"
    (config / "settings.json").write_text(json.dumps({"apiKeyHelper": helper}))
    del turn.env["ANTHROPIC_API_KEY"]  # no key in the turn: only the helper can log it in
    model.brain = Script([[Say("Logged in.")]])
    outcome = run(turn, claude)

    assert outcome.ok, turn.stderr()  # type: ignore[attr-defined]
    keys = {c.headers.get("x-api-key") or c.headers.get("X-Api-Key") for c in model.requests}
    assert keys == {"sk-from-the-users-helper"}
