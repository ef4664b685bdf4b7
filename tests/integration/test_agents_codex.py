"""The codex adapter against a fake `codex` that speaks `exec --json` and runs the real
`consort guard` when it is given a PreToolUse hook (the real Codex CLI is not run here)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from consort.adapters.agents.base import KillReason
from consort.adapters.agents.codex import CodexAdapter, parse_stream, parse_version
from consort.adapters.agents.command import Limits
from consort.adapters.agents.config import adapter_for
from consort.adapters.agents.headless import EditStatus, RetryPolicy
from consort.adapters.agents.stream import StreamLines
from consort.core.errors import UsageError
from consort.core.project import Project
from consort.core.vocabulary import Role
from tests.fakes import FAKES, FakeTurn, invocations

pytestmark = pytest.mark.integration

FAST = Limits(inactivity_s=30, wall_clock_s=120, grace_s=1)
NO_WAIT = RetryPolicy(retries=2, backoff_s=0.01)
DONE = {"complete": None}


def adapter(**overrides: object) -> CodexAdapter:
    settings: dict[str, object] = {"command": ("codex",), "limits": FAST, "retry": NO_WAIT}
    settings.update(overrides)
    return CodexAdapter(**settings)  # type: ignore[arg-type]


def option_values(argv: list[str], name: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == name]


def test_a_turn_records_file_changes_usage_and_the_final_message(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path, database_url="postgresql://localhost/app_s1")
    turn.scenario(
        "codex",
        steps=[
            {"message": "Looking at the failing test."},
            {"bash": "cat tests/test_stock.py"},
            {"patch": str(turn.tree / "src" / "stock.py"), "content": "STOCK = 1"},
            {"output": "notes", "content": '{"ok": true}'},
            {"message": "T1 passes."},
            {"complete": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 300}},
        ],
    )
    outcome = adapter(model="gpt-test", effort="high").run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok, turn.dir.stderr_path.read_text()
    assert (turn.tree / "src" / "stock.py").read_text() == "STOCK = 1"
    record = turn.record()
    assert record["status"] == "ok"
    assert record["adapter"] == "codex"
    assert record["session_id"] == "thread-fake-0001"
    assert record["result"] == "T1 passes."
    assert record["usage"] == {
        "input_tokens": 1000,
        "cached_input_tokens": 200,
        "output_tokens": 300,
    }
    assert record["cost_usd"] is None  # Codex reports tokens, not cost
    assert [(e["path"], e["tool"], e["status"]) for e in record["edits"]] == [
        ("src/stock.py", "file_change:add", "done"),
        (".consort/turns/0001-driver-green/outputs/notes.json", "file_change:add", "done"),
    ]
    assert record["guard"].startswith("PreToolUse hook")

    (call,) = invocations(turn.codex_log)
    argv = call["argv"]
    assert argv[:2] == ["exec", "--json"]
    assert option_values(argv, "--sandbox") == ["workspace-write"]
    assert option_values(argv, "--cd") == [str(turn.tree)]
    assert option_values(argv, "--model") == ["gpt-test"]
    overrides = option_values(argv, "-c")
    assert 'model_reasoning_effort="high"' in overrides
    assert "sandbox_workspace_write.network_access=true" in overrides  # a build turn's database
    assert any(o.startswith("hooks.PreToolUse=") and "consort guard" in o for o in overrides)
    assert option_values(argv, "--add-dir") == []  # the outputs are inside the tree
    prompt = argv[-1]
    assert prompt.startswith("# Driver")
    assert "Make T1 pass." in prompt
    assert call["env"]["DATABASE_URL"] == "postgresql://localhost/app_s1"


def test_the_hook_refuses_a_protected_patch_and_a_protected_command(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    original = turn.test_file.read_text()
    turn.scenario(
        "codex",
        steps=[
            {"patch": "tests/test_stock.py", "content": "def test_stock():\n    pass"},
            {"bash": "git checkout -- tests/test_stock.py; rm tests/test_stock.py"},
            {"patch": "src/stock.py", "content": "STOCK = 1"},
            DONE,
        ],
    )
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    assert turn.test_file.read_text() == original
    assert (turn.tree / "src" / "stock.py").exists()
    record = turn.record()
    # As the real Codex: a refused call leaves no JSON event; its stderr says it was blocked.
    assert {(e["path"], e["status"]) for e in record["edits"]} == {("src/stock.py", "done")}
    refused = record["refused"]
    assert [(r["tool"], r["target"]) for r in refused] == [
        ("apply_patch", "tests/test_stock.py"),
        ("Bash", "git checkout -- tests/test_stock.py; rm tests/test_stock.py"),
    ]
    assert "apply_patch refused: it changes tests/test_stock.py" in refused[0]["reason"]
    assert "refused: it would check out over tests/test_stock.py" in refused[1]["reason"]
    (call,) = invocations(turn.codex_log)
    assert "--dangerously-bypass-hook-trust" in call["argv"]
    assert call["argv"][-2] == "--"  # the prompt can never be taken for an option
    # What result.json and the ledger are given: the adapter, the CLI, its version, refusals.
    assert outcome.agent is not None
    assert (outcome.agent.adapter, outcome.agent.program) == ("codex", "Codex")
    assert outcome.agent.version == "0.171.0"
    assert [r.target for r in outcome.agent.refused] == [r["target"] for r in refused]


@pytest.mark.parametrize(
    ("version", "hooks", "flag"),
    [("0.124.0", True, False), ("0.128.0", True, False), ("0.129.0", False, False),
     ("0.140.0", False, False), ("0.141.0", True, True), ("0.171.0", True, True)],
)  # fmt: skip
def test_the_guard_is_wired_as_each_version_runs_hooks(
    tmp_path: Path, version: str, hooks: bool, flag: bool
) -> None:
    turn = FakeTurn(tmp_path)
    turn.env["FAKE_CODEX_VERSION"] = version
    turn.scenario("codex", steps=[{"patch": "tests/test_stock.py", "content": "changed"}, DONE])
    adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    (call,) = invocations(turn.codex_log)
    assert any(o.startswith("hooks.") for o in option_values(call["argv"], "-c")) is hooks
    assert ("--dangerously-bypass-hook-trust" in call["argv"]) is flag
    record = turn.record()
    assert record["cli_version"] == version
    assert record["guard"].startswith("PreToolUse hook" if hooks else "post-turn diff only")
    assert (turn.test_file.read_text() == "changed") is not hooks


def test_without_hooks_in_the_installed_version_only_the_post_turn_diff_guards(
    tmp_path: Path,
) -> None:
    turn = FakeTurn(tmp_path)
    turn.env["FAKE_CODEX_VERSION"] = "0.98.0"
    turn.scenario("codex", steps=[{"patch": "tests/test_stock.py", "content": "changed"}, DONE])
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    # Nothing stopped the write: the build lane's diff against the protected paths reverts it.
    assert turn.test_file.read_text() == "changed"
    assert turn.record()["guard"].startswith("post-turn diff only")
    (call,) = invocations(turn.codex_log)
    assert not any(o.startswith("hooks.") for o in option_values(call["argv"], "-c"))


def test_outputs_outside_the_tree_are_added_to_the_sandbox(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path, output_outside=True)
    turn.scenario("codex", steps=[{"output": "notes", "content": "{}"}, DONE])
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    (call,) = invocations(turn.codex_log)
    assert option_values(call["argv"], "--add-dir") == [str(turn.output.parent)]
    assert "sandbox_workspace_write.network_access=true" not in option_values(call["argv"], "-c")

    turn.env["FAKE_CODEX_NO_ADD_DIR"] = "1"  # an older codex: not offered
    adapter().run(turn.task, turn.dir, turn.tree, turn.env)
    assert option_values(invocations(turn.codex_log)[1]["argv"], "--add-dir") == []


def test_the_guard_protects_the_state_folder_outside_a_worktree(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path, output_outside=True)
    ledger = turn.dir.path.parent.parent / "ledger.jsonl"
    ledger.write_text("{}\n")
    turn.scenario(
        "codex",
        steps=[{"bash": f"echo forged >> {ledger}"}, {"output": "notes", "content": "{}"}, DONE],
    )
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    assert ledger.read_text() == "{}\n"
    assert turn.output.read_text() == "{}"  # the turn's own output is allowed


def test_a_failed_turn_with_a_rate_limit_is_retried_then_succeeds(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario(
        "codex",
        attempts=[
            {"steps": [{"fail": "exceeded retry limit, last status: 429 Too Many Requests"}],
             "exit": 1},
            {"steps": [{"patch": "src/stock.py", "content": "x"}, DONE]},
        ],
    )  # fmt: skip
    outcome = adapter().run(turn.task, turn.dir, turn.tree, turn.env)

    assert outcome.ok
    attempts = turn.record()["attempts"]
    assert [a["failure"] for a in attempts] == ["transient", "none"]
    assert "429" in attempts[0]["message"]


def test_an_expired_login_stops_the_run_with_codex_login(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    turn.scenario(
        "codex",
        steps=[{"error": "unexpected status 401 Unauthorized: token expired"}, {"fail": "401"}],
        exit=1,
    )
    with pytest.raises(UsageError) as caught:
        adapter().run(turn.task, turn.dir, turn.tree, turn.env)
    assert caught.value.fix is not None and "codex login" in caught.value.fix
    assert len(invocations(turn.codex_log)) == 1


def test_hang_crash_and_malformed_lines(tmp_path: Path) -> None:
    stalled = FakeTurn(tmp_path / "a")
    stalled.scenario("codex", steps=[{"hang": 60}, DONE])
    limits = Limits(inactivity_s=1.0, wall_clock_s=60, grace_s=1, poll_s=0.05)
    outcome = adapter(limits=limits).run(stalled.task, stalled.dir, stalled.tree, stalled.env)
    assert outcome.killed is KillReason.INACTIVITY
    assert len(stalled.record()["attempts"]) == 1

    crashed = FakeTurn(tmp_path / "b")
    crashed.scenario("codex", steps=[{"crash": 101}])
    outcome = adapter().run(crashed.task, crashed.dir, crashed.tree, crashed.env)
    assert outcome.exit_code == 101
    assert not outcome.ok
    assert "panicked" in crashed.dir.stderr_path.read_text()

    noisy = FakeTurn(tmp_path / "c")
    noisy.scenario(
        "codex",
        steps=[{"garbage": "WARN codex_core: something"}, {"garbage": '{"type": "item.comp'}, DONE],
    )
    outcome = adapter().run(noisy.task, noisy.dir, noisy.tree, noisy.env)
    assert outcome.ok
    assert noisy.record()["malformed_lines"] == 2


def test_consort_toml_configures_the_codex_adapter(tmp_path: Path) -> None:
    turn = FakeTurn(tmp_path)
    (turn.tree / "consort.toml").write_text(
        f"""
[agents]
default = "codex"
command = ["{turn.bin / "codex"}"]
model = "gpt-5-codex"
effort = "low"
retries = 0
# The fake keeps its scenario and log beside the tree, and runs from the tests' folder.
state = ["{tmp_path}"]
read_only = ["{FAKES}"]
"""
    )
    configured = adapter_for(Project(turn.tree), Role.DRIVER)
    assert isinstance(configured, CodexAdapter)
    assert configured.retry.retries == 0
    turn.scenario("codex", steps=[DONE])
    assert configured.run(turn.task, turn.dir, turn.tree, turn.env).ok
    argv = invocations(turn.codex_log)[0]["argv"]
    assert option_values(argv, "--model") == ["gpt-5-codex"]
    assert 'model_reasoning_effort="low"' in option_values(argv, "-c")


# ---- the stream, without a process ------------------------------------------------------------


def test_parse_stream_reads_the_documented_events(tmp_path: Path) -> None:
    events = [
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "turn.started"},
        {"type": "item.started", "item": {"id": "i1", "type": "command_execution"}},
        {"type": "item.completed", "item": {"id": "i1", "type": "command_execution"}},
        {
            "type": "item.completed",
            "item": {
                "id": "i2",
                "item_type": "file_change",  # older releases named the field item_type
                "status": "completed",
                "changes": [
                    {"path": str(tmp_path / "src" / "a.py"), "kind": "update"},
                    {"path": "src/b.py", "kind": "delete"},
                ],
            },
        },
        {"type": "item.completed", "item": {"id": "i3", "type": "file_change",
                                            "status": "failed", "changes": [{"path": "x"}]}},
        {"type": "item.completed", "item": {"id": "i4", "type": "agent_message", "text": "ok"}},
        {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 7}},
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
    ]  # fmt: skip
    summary = parse_stream(StreamLines(events), tmp_path)

    assert summary.session_id == "t-1"
    assert summary.finished and not summary.is_error
    assert summary.result == "ok"
    assert summary.usage == {"input_tokens": 6, "output_tokens": 8}
    assert summary.tool_calls == 3
    assert [(e.path, e.tool, e.status) for e in summary.edits] == [
        ("src/a.py", "file_change:update", EditStatus.DONE),
        ("src/b.py", "file_change:delete", EditStatus.DONE),
        ("x", "file_change:change", EditStatus.FAILED),
    ]


def test_parse_version() -> None:
    assert parse_version("codex-cli 0.124.0") == (0, 124, 0)
    assert parse_version("codex-cli 1.2.3-alpha.1\n") == (1, 2, 3)
    assert parse_version("no version") is None


def test_the_hook_override_is_a_toml_value_codex_can_read(tmp_path: Path) -> None:
    import tomllib

    value = CodexAdapter(guard_command=("/py thon", "-m", "consort", "guard")).hook_override(
        tmp_path / "my tree"
    )
    key, _, toml = value.partition("=")
    assert key == "hooks.PreToolUse"
    (entry,) = tomllib.loads(f"v = {toml}")["v"]
    assert entry["matcher"] == "^(Bash|apply_patch)$"
    command = shlex.split(entry["hooks"][0]["command"])
    assert command[:2] == ["sh", "-c"]  # fail closed: a crash of the guard refuses the call
    assert command[4:] == [
        "/py thon", "-m", "consort", "guard", "--tree", str(tmp_path / "my tree"),
        "--refuse-terminal-programs",
    ]  # fmt: skip
    assert json.dumps(entry["hooks"][0]["timeout"]) == "60"


def test_a_tool_call_codex_logs_as_failed_is_a_warning_in_the_record(tmp_path: Path) -> None:
    from consort.adapters.agents.codex import parse_stream
    from consort.adapters.agents.stream import StreamLines

    stderr = (
        "2026-12-01T11:50:58.184060Z ERROR codex_core::tools::router: error=apply_patch "
        "verification failed: invalid patch: multiple operations target /t/app/main.py\n"
    )
    summary = parse_stream(StreamLines(), tmp_path, stderr)
    assert summary.refused == []
    assert summary.warnings == [
        "a tool call failed: apply_patch verification failed: invalid patch: multiple "
        "operations target /t/app/main.py"
    ]
