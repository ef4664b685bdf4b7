"""Shared by the fake agents: scenario attempts, invocation logs, and PreToolUse hooks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any


def load_attempt(variable: str) -> dict[str, Any]:
    """This invocation's attempt of the scenario named by the environment variable."""
    path = Path(os.environ[variable])
    data = json.loads(path.read_text())
    attempts = data.get("attempts")
    if attempts is None:
        return data
    counter = path.with_suffix(".count")
    number = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(number + 1))
    return attempts[min(number, len(attempts) - 1)]


def log_invocation(variable: str, argv: list[str]) -> None:
    log = os.environ.get(variable)
    if not log:
        return
    record = {
        "argv": argv,
        "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("CONSORT_", "DATABASE_"))},
    }
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def run_hooks(
    entries: list[dict[str, Any]], tool_name: str, tool_input: dict[str, Any], session: str
) -> str | None:
    """Run the matching PreToolUse hook commands the way the tools do; the reason when one
    refused the call (exit 2), else None. A hook that fails otherwise (another exit code) lets
    the call through, as both real CLIs do, unless it says `"onFailure": "block"` (Claude Code
    2.1)."""
    payload = {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": os.getcwd(),
        "permission_mode": "acceptEdits",
        "hook_event_name": "PreToolUse",
        "tool_name": tool_name,
        "tool_input": tool_input,
    }
    for entry in entries:
        matcher = entry.get("matcher") or ".*"
        if re.fullmatch(matcher.replace("^", "").replace("$", ""), tool_name) is None:
            continue
        for hook in entry.get("hooks", []):
            # The tools run hook commands through a shell, and so does this fake.
            done = subprocess.run(  # noqa: S602
                hook["command"],
                shell=True,
                input=json.dumps(payload),
                capture_output=True,
                text=True,
                timeout=hook.get("timeout", 60),
                check=False,
            )
            if done.returncode == 2:
                return done.stderr.strip() or "blocked"
            if done.returncode != 0 and hook.get("onFailure") == "block":
                return f'failed; blocking because onFailure is "block" {done.stderr.strip()}'
    return None


def task_output(name: str) -> str:
    task = json.loads(Path(os.environ["CONSORT_TASK"]).read_text())
    return str(task["outputs"][name])
