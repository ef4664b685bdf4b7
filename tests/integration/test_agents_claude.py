"""The claude adapter against a fake `claude` that speaks stream-json and runs the real
`consort guard` as its PreToolUse hook (the real Claude Code is not run here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consort.adapters.agents.base import KillReason
from consort.adapters.agents.claude import ClaudeAdapter
from consort.adapters.agents.command import Limits
from consort.adapters.agents.config import adapter_for
from consort.adapters.agents.headless import RetryPolicy
from consort.core.errors import UsageError
from consort.core.project import Project
from consort.core.vocabulary import Role
from tests.fakes import FAKES, FakeTurn, invocations

pytestmark = pytest.mark.integration

FAST = Limits(inactivity_s=30, wall_clock_s=120, grace_s=1)
NO_WAIT = RetryPolicy(retries=2, backoff_s=0.01)
RESULT = {"result": {}}


def adapter(**overrides: object) -> ClaudeAdapter:
    settings: dict[str, object] = {"command": ("claude",), "limits": FAST, "retry": NO_WAIT}
    settings.update(overrides)
    return ClaudeAdapter(**settings)  # type: ignore[arg-type]


def test_a_turn_that_edits_files_records_what_the_stream_reports(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario(
        "claude",
        steps=[
            {"init": True},
            {"text": "Writing the code."},
            {"write": str(turn.tree / "src" / "stock.py"), "content": "STOCK = 1\n"},
            {"edit": "src/stock.py", "old": "1", "new": "2"},
            {"output": "notes", "content": '{"ok": true}'},
            {"result": {"result": "T1 passes now", "total_cost_usd": 0.25, "duration_ms": 4321}},
        ],
    )
    outcome = adapter(model="claude-opus-test", effort="high").run(
        turn.task, turn.dir, turn.tree, turn.env
    )

    assert outcome.ok, turn.dir.stderr_path.read_text()
    assert (turn.tree / "src" / "stock.py").read_text() == "STOCK = 2\n"
    assert json.loads(turn.output.read_text()) == {"ok": True}
    record = turn.record()
    assert record["status"] == "ok"
    assert record["result"] == "T1 passes now"
    assert record["cost_usd"] == 0.25
    assert record["duration_ms"] == 4321
    assert record["usage"]["output_tokens"] == 50
    assert record["session_id"] == "fake-session-0001"
    assert record["model"] == "claude-opus-test"
    edits = [(e["path"], e["tool"], e["status"]) for e in record["edits"]]
    assert edits == [
        ("src/stock.py", "Write", "done"),
        ("src/stock.py", "Edit", "done"),
        (".consort/turns/0001-driver-green/outputs/notes.json", "Write", "done"),
    ]
    assert len(record["attempts"]) == 1

    (call,) = invocations(turn.claude_log)
    argv = call["argv"]
    assert call["cwd"] == str(turn.tree)
    assert call["env"]["CONSORT_TASK"] == str(turn.dir.task_path)
    assert argv[argv.index("--output-format") + 1] == "stream-json"
    assert "--verbose" in argv
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert argv[argv.index("--setting-sources") + 1] == "project"
    assert argv[argv.index("--model") + 1] == "claude-opus-test"
    assert argv[argv.index("--effort") + 1] == "high"
    system = argv[argv.index("--append-system-prompt") + 1]
    assert system.startswith("# Driver")  # the role prompt
    assert "How a Consort turn works" in system
    prompt = argv[argv.index("-p") + 1]
    assert "Make T1 pass." in prompt
    assert str(turn.output) in prompt and "`tests/**`" in prompt
    settings = json.loads(Path(argv[argv.index("--settings") + 1]).read_text())
    (hook_entry,) = settings["hooks"]["PreToolUse"]
    assert hook_entry["matcher"] == "Write|Edit|MultiEdit|NotebookEdit|Bash"
    hook = hook_entry["hooks"][0]["command"]
    assert "-m consort guard --tree" in hook and str(turn.tree) in hook


def test_the_hook_refuses_protected_writes_and_the_agent_carries_on(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    original = turn.test_file.read_text()
    turn.scenario(
        "claude",
        steps=[
            {"init": True},
            {"write": str(turn.test_file), "content": "def test_stock():\n    pass\n"},
            {"bash": "sed -i 's/False/True/' tests/test_stock.py"},
            {"bash": "rm -rf tests"},
            {"write": "src/conftest.py", "content": "# sneaky\n"},
            {"write": str(turn.dir.path / "task.json"), "content": "{}"},
            {"write": "src/stock.py", "content": "STOCK = 1\n"},
            {"bash": "cat tests/test_stock.py > src/copy.txt"},
            RESULT,
        ],
    )
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    assert turn.test_file.read_text() == original  # neither the Write, sed -i nor rm got through
    assert not (turn.tree / "src" / "conftest.py").exists()
    assert json.loads(turn.dir.task_path.read_text())["turn"] == "0001"
    assert (turn.tree / "src" / "stock.py").read_text() == "STOCK = 1\n"
    assert (turn.tree / "src" / "copy.txt").read_text() == original  # reading is fine
    edits = {(e["path"], e["status"]) for e in turn.record()["edits"]}
    assert ("tests/test_stock.py", "refused") in edits
    assert ("src/conftest.py", "refused") in edits
    assert (".consort/turns/0001-driver-green/task.json", "refused") in edits
    assert ("src/stock.py", "done") in edits
    refusal = next(e for e in turn.record()["edits"] if e["path"] == "tests/test_stock.py")
    assert "protected by `tests/**`" in refusal["detail"]
    # What the agent saw for the refused Bash commands:
    stream = turn.dir.stdout_path.read_text()
    assert "`sed -i s/False/True/ tests/test_stock.py` refused" in stream
    assert "`rm -rf tests` refused" in stream


def test_malformed_lines_are_counted_and_the_rest_still_counts(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario(
        "claude",
        steps=[
            {"garbage": "[debug] starting up"},
            {"init": True},
            {"garbage": '{"type": "assistant", "message": '},
            {"garbage": "[1, 2, 3]"},
            {"write": "src/stock.py", "content": "x = 1\n"},
            {"result": {"total_cost_usd": 0.5}},
        ],
    )
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    record = turn.record()
    assert record["malformed_lines"] == 3
    assert record["malformed_samples"][0] == "[debug] starting up"
    assert record["cost_usd"] == 0.5
    assert [e["path"] for e in record["edits"]] == ["src/stock.py"]


def test_a_stalled_claude_is_killed_by_the_inactivity_timeout_and_not_retried(
    tmp_path: Path,
) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario("claude", steps=[{"init": True}, {"hang": 60}, RESULT])
    limits = Limits(inactivity_s=1.0, wall_clock_s=60, grace_s=1, poll_s=0.05)
    outcome = adapter(limits=limits).run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.killed is KillReason.INACTIVITY
    assert not outcome.ok
    assert outcome.duration_s < 20
    record = turn.record()
    assert record["status"] == "killed (inactivity)"
    assert len(record["attempts"]) == 1
    assert len(invocations(turn.claude_log)) == 1


def test_a_crash_is_a_failed_attempt_with_its_exit_code(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario("claude", steps=[{"init": True}, {"crash": 3}])
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.exit_code == 3
    assert not outcome.ok
    assert "fake crash" in turn.dir.stderr_path.read_text()
    record = turn.record()
    assert record["status"] == "failed"
    assert len(record["attempts"]) == 1  # a crash is not retried


def test_an_expired_login_stops_the_run_with_the_command_that_fixes_it(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario(
        "claude",
        steps=[
            {"init": True},
            {"text": "Invalid API key · Please run /login"},
            {"result": {"is_error": True, "result": "Invalid API key · Please run /login"}},
        ],
        exit=1,
    )
    with pytest.raises(UsageError) as caught:
        adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert "not logged in, or its login expired" in caught.value.message
    assert "Invalid API key" in caught.value.message
    assert caught.value.fix is not None and "claude /login" in caught.value.fix
    assert "claude setup-token" in caught.value.fix
    assert turn.record()["status"] == "login-needed"
    assert len(invocations(turn.claude_log)) == 1  # no retry


def test_a_login_that_expires_mid_turn_is_a_failed_attempt_so_the_turn_is_checked(
    tmp_path: Path,
) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario(
        "claude",
        steps=[
            {"init": True},
            {"write": "src/stock.py", "content": "x = 1\n"},
            {"result": {"is_error": True, "result": "OAuth token has expired"}},
        ],
        exit=1,
    )
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert not outcome.ok
    assert outcome.error is not None and "claude /login" in outcome.error
    assert "claude /login" in turn.dir.stderr_path.read_text()
    assert turn.record()["status"] == "login-needed"
    assert len(invocations(turn.claude_log)) == 1


def test_a_transient_api_error_is_retried_with_backoff_then_succeeds(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    overloaded = 'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}'
    turn.scenario(
        "claude",
        attempts=[
            {"steps": [{"init": True}, {"result": {"is_error": True, "result": overloaded}}],
             "exit": 1},
            {"steps": [{"init": True}, {"stderr": "Error: socket hang up"}], "exit": 1},
            {"steps": [{"init": True}, {"write": "src/stock.py", "content": "x\n"}, RESULT]},
        ],
    )  # fmt: skip
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    record = turn.record()
    assert [a["failure"] for a in record["attempts"]] == ["transient", "transient", "none"]
    assert "529" in record["attempts"][0]["message"]
    assert record["attempts"][0]["stdout"] == "stdout.1"
    assert "overloaded_error" in (turn.dir.path / "stdout.1").read_text()
    assert "socket hang up" in (turn.dir.path / "stderr.2").read_text()
    assert len(invocations(turn.claude_log)) == 3


def test_transient_errors_give_up_after_the_configured_retries(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    rate_limited = {"result": {"is_error": True, "result": "API Error: 429 rate_limit_error"}}
    turn.scenario("claude", steps=[{"init": True}, rate_limited], exit=1)
    retry = RetryPolicy(retries=1, backoff_s=0.01)
    outcome = adapter(retry=retry).run(turn.task, turn.dir, turn.tree, turn.env)

    assert not outcome.ok
    assert outcome.error is not None and "transient API error on 2 attempt(s)" in outcome.error
    assert len(invocations(turn.claude_log)) == 2
    assert turn.record()["status"] == "transient-error"


def test_an_error_result_never_counts_as_success_even_with_exit_0(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario(
        "claude",
        steps=[{"init": True}, {"result": {"is_error": True, "subtype": "error_max_turns"}}],
    )
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.exit_code == 0
    assert not outcome.ok
    assert outcome.error is not None and "reported a failure" in outcome.error


def test_no_final_result_is_a_failure(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario("claude", steps=[{"init": True}, {"text": "bye"}])
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert not outcome.ok
    assert outcome.error is not None and "without a final result" in outcome.error


def test_claude_not_installed_is_a_usage_error_with_the_install_command(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    with pytest.raises(UsageError) as caught:
        adapter(command=("claude-not-here",)).run(turn.task, turn.dir, turn.tree, turn.env)
    assert "is not installed" in caught.value.message
    assert caught.value.fix is not None and "npm install -g @anthropic-ai/claude-code" in (
        caught.value.fix
    )
    assert turn.record()["status"] == "not-installed"


def test_a_prompt_too_long_for_one_argument_goes_through_a_file(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    big = turn.task.model_copy(update={"instructions": "Make T1 pass. " + "x" * 150_000})
    turn.dir.write_task(big)
    turn.scenario("claude", steps=[{"init": True}, RESULT])
    outcome = adapter().run(big, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    prompt_file = turn.dir.path / "prompt.md"
    assert "x" * 150_000 in prompt_file.read_text()
    (call,) = invocations(turn.claude_log)
    assert str(prompt_file) in call["argv"][call["argv"].index("-p") + 1]


def test_consort_toml_configures_the_claude_adapter_per_role(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    project_root = tmp_path / "tree"
    (project_root / "consort.toml").write_text(
        f"""
[agents]
default = "command"
command = ["true"]
retry_backoff = 0.01

[agents.driver]
adapter = "claude"
command = ["{turn.bin / "claude"}"]
model = "claude-sonnet-test"
effort = "medium"
inactivity_timeout = 30
# The fake keeps its scenario and log beside the tree, and runs from the tests' folder.
state = ["{tmp_path}"]
read_only = ["{FAKES}"]
"""
    )
    (project_root / ".consort" / "roles").mkdir(parents=True, exist_ok=True)
    (project_root / ".consort" / "roles" / "driver.md").write_text("# Our own driver\n")
    turn.scenario("claude", steps=[{"init": True}, RESULT])
    configured = adapter_for(Project(project_root), Role.DRIVER)
    assert isinstance(configured, ClaudeAdapter)
    assert configured.retry.backoff_s == 0.01
    outcome = configured.run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    (call,) = invocations(turn.claude_log)
    argv = call["argv"]
    assert argv[argv.index("--model") + 1] == "claude-sonnet-test"
    assert argv[argv.index("--effort") + 1] == "medium"
    assert argv[argv.index("--append-system-prompt") + 1].startswith("# Our own driver")
