"""Reading Claude Code's stream-json output, classifying failures, and the turn's prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consort.adapters.agents.base import KillReason, TurnOutcome
from consort.adapters.agents.claude import PROFILE, parse_stream
from consort.adapters.agents.codex import PROFILE as CODEX_PROFILE
from consort.adapters.agents.headless import (
    EditStatus,
    FailureKind,
    RetryPolicy,
    StreamSummary,
    classify,
    system_prompt,
    task_prompt,
)
from consort.adapters.agents.stream import read_jsonl
from consort.adapters.agents.task import Task
from consort.core.vocabulary import Role, Step
from consort.roles import packaged_prompt


def tool_use(tool_id: str, name: str, **tool_input: object) -> dict[str, object]:
    block = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
    return {"type": "assistant", "message": {"role": "assistant", "content": [block]}}


def tool_result(tool_id: str, content: object, *, is_error: bool = False) -> dict[str, object]:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error:
        block["is_error"] = True
    return {"type": "user", "message": {"role": "user", "content": [block]}}


def write_stream(path: Path, *events: object, raw: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + raw)
    return path


def test_a_whole_stream(tmp_path: Path) -> None:
    stream = write_stream(
        tmp_path / "stdout",
        {"type": "system", "subtype": "init", "session_id": "s-1", "model": "claude-x"},
        tool_use("t1", "Write", file_path=str(tmp_path / "src" / "a.py"), content="x"),
        tool_use("t2", "Edit", file_path="tests/test_a.py", old_string="a", new_string="b"),
        tool_use("t3", "Bash", command="pytest"),
        tool_use("t4", "MultiEdit", file_path="src/b.py", edits=[]),
        tool_use("t5", "NotebookEdit", notebook_path="nb.ipynb", new_source="x"),
        tool_result("t1", "File created"),
        tool_result(
            "t2",
            [{"type": "text", "text": "PreToolUse:Edit hook error: consort guard: refused"}],
            is_error=True,
        ),
        tool_result("t3", "1 passed"),
        tool_result("t4", "String to replace not found", is_error=True),
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "All done."}]}},
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "All done.",
            "total_cost_usd": 0.42,
            "duration_ms": 9000,
            "num_turns": 6,
            "usage": {"input_tokens": 10, "output_tokens": 20, "server_tool_use": {"x": 1}},
        },
        raw='{"type": "result", "subty',  # a last line cut short
    )
    summary = parse_stream(read_jsonl(stream), tmp_path)

    assert (summary.session_id, summary.model) == ("s-1", "claude-x")
    assert summary.finished and not summary.is_error
    assert (summary.result, summary.cost_usd, summary.duration_ms) == ("All done.", 0.42, 9000)
    assert summary.num_turns == 6
    assert summary.usage == {"input_tokens": 10, "output_tokens": 20}
    assert summary.tool_calls == 5
    assert summary.malformed == 1
    assert summary.last_text == "All done."
    assert [(e.path, e.tool, e.status) for e in summary.edits] == [
        ("src/a.py", "Write", EditStatus.DONE),
        ("tests/test_a.py", "Edit", EditStatus.REFUSED),
        ("src/b.py", "MultiEdit", EditStatus.FAILED),
        ("nb.ipynb", "NotebookEdit", EditStatus.UNKNOWN),  # no result came
    ]
    assert summary.edits[1].detail is not None and "consort guard" in summary.edits[1].detail


def test_nothing_but_noise(tmp_path: Path) -> None:
    stream = tmp_path / "stdout"
    stream.write_bytes(b"\xff\xfe not utf-8\n\n[]\n42\nnull\n")
    lines = read_jsonl(stream)
    assert (lines.events, lines.malformed) == ([], 4)
    summary = parse_stream(lines, tmp_path)
    assert not summary.finished
    assert read_jsonl(tmp_path / "missing").events == []


def outcome(tmp_path: Path, exit_code: int = 0, **kwargs: object) -> TurnOutcome:
    return TurnOutcome(exit_code, 1.0, tmp_path / "o", tmp_path / "e", **kwargs)  # type: ignore[arg-type]


def failed_with(result: str | None = None, subtype: str | None = None) -> StreamSummary:
    return StreamSummary(finished=True, is_error=True, result=result, subtype=subtype)


AUTH_JSON = 'API Error: 401 {"type":"error","error":{"type":"authentication_error"}}'


@pytest.mark.parametrize(
    ("summary", "exit_code", "stderr", "kind"),
    [
        (StreamSummary(finished=True), 0, "", FailureKind.NONE),
        (failed_with("Invalid API key · Please run /login"), 1, "", FailureKind.AUTH),
        (StreamSummary(last_text="OAuth token has expired. Please obtain a new token"), 1, "",
         FailureKind.AUTH),
        (StreamSummary(), 1, AUTH_JSON, FailureKind.AUTH),
        (failed_with('API Error: 529 {"type":"overloaded_error"}'), 1, "", FailureKind.TRANSIENT),
        (failed_with("API Error: 500 Internal server error"), 1, "", FailureKind.TRANSIENT),
        (StreamSummary(), 1, "Error: Request timed out.", FailureKind.TRANSIENT),
        (StreamSummary(), 1, "FetchError: reason: ECONNRESET", FailureKind.TRANSIENT),
        (failed_with(subtype="error_max_turns"), 1, "", FailureKind.FAILED),
        (failed_with("Credit balance is too low"), 1, "", FailureKind.FAILED),
        (StreamSummary(), 0, "", FailureKind.FAILED),  # exit 0, but no result
        (StreamSummary(finished=True), 139, "Segmentation fault", FailureKind.FAILED),
    ],
)  # fmt: skip
def test_classify(
    tmp_path: Path, summary: StreamSummary, exit_code: int, stderr: str, kind: FailureKind
) -> None:
    found, message = classify(summary, outcome(tmp_path, exit_code), stderr, PROFILE)
    assert found is kind
    assert (message is None) is (kind is FailureKind.NONE)


def test_a_killed_run_is_never_retried_whatever_it_printed(tmp_path: Path) -> None:
    killed = outcome(tmp_path, -15, killed=KillReason.INACTIVITY)
    found, message = classify(StreamSummary(), killed, "API Error: 529 overloaded", PROFILE)
    assert found is FailureKind.FAILED
    assert message == "stopped by Consort (inactivity timeout)"


def test_codex_failures(tmp_path: Path) -> None:
    failed = StreamSummary(
        finished=True, is_error=True, errors=["stream disconnected before completion"]
    )
    assert classify(failed, outcome(tmp_path, 1), "", CODEX_PROFILE)[0] is FailureKind.TRANSIENT
    auth = StreamSummary(errors=["Your access token could not be refreshed; please log in again"])
    assert classify(auth, outcome(tmp_path, 1), "", CODEX_PROFILE)[0] is FailureKind.AUTH
    usage = StreamSummary(finished=True, is_error=True, errors=["You've hit your usage limit."])
    assert classify(usage, outcome(tmp_path, 1), "", CODEX_PROFILE)[0] is FailureKind.FAILED


def test_backoff_doubles_up_to_a_cap() -> None:
    policy = RetryPolicy(retries=5, backoff_s=10, max_backoff_s=35)
    assert [policy.delay(n) for n in range(1, 5)] == [10, 20, 35, 35]


def test_the_turn_prompt_carries_the_task_and_not_the_role_prompt_twice(tmp_path: Path) -> None:
    role_prompt = packaged_prompt(Role.DRIVER)
    task = Task(
        turn="0007",
        role=Role.DRIVER,
        step=Step.REPAIR,
        attempt=2,
        feature="F1-stock",
        story="S1",
        item="T3",
        instructions=role_prompt + "\n\n## This turn\n\nMake T3 pass.\n",
        inputs={"test": tmp_path / "tests" / "test_t3.py"},
        outputs={},
        writable=("src/**",),
        protected=("tests/**",),
        feedback="AssertionError: 2 != 3",
    )
    prompt = task_prompt(task, tmp_path / "task.json", role_prompt)

    assert prompt.startswith("# Consort turn 0007: driver, step repair (attempt 2)")
    assert "feature F1-stock, story S1, item T3" in prompt
    assert "## This turn\n\nMake T3 pass." in prompt
    assert role_prompt.splitlines()[2] not in prompt  # the role prompt went to the system prompt
    assert f"- test: {tmp_path / 'tests' / 'test_t3.py'}" in prompt
    assert "- `src/**`" in prompt
    assert "- `tests/**`\n- `.consort/**`" in prompt
    assert prompt.rstrip().endswith("AssertionError: 2 != 3")
    system = system_prompt(role_prompt)
    assert system.startswith(role_prompt.rstrip())
    assert "CONSORT_TASK" in system
