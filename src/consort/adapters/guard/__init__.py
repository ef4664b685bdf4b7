"""`consort guard`: the PreToolUse hook that refuses a protected write before it happens.

Claude Code (and Codex, where its hooks are available) runs the hook before each tool call, with
a JSON object on stdin::

    {"session_id": "...", "transcript_path": "...", "cwd": "/abs/tree",
     "hook_event_name": "PreToolUse", "tool_name": "Write",
     "tool_input": {"file_path": "/abs/tree/tests/test_x.py", "content": "..."}}

Exit 0 lets the call run; exit 2 refuses it, and the tool shows stderr (the reason) to the model.

- Write, Edit, MultiEdit (`file_path`) and NotebookEdit (`notebook_path`) are refused when the path
  falls under the turn's protected globs, or under Consort's state (`.consort/`), except the
  turn's own outputs.
- Bash (Claude and Codex; `tool_input.command`, a string or an argv list) is refused when the
  command would write, move, delete or edit in place such a path; see `guard.shell` for
  what is and is not caught.
- Codex's `apply_patch` (the patch text in `tool_input.command`) is refused when the patch
  touches such a path.
- With `terminal_programs=False` (`consort guard --refuse-terminal-programs`, which the codex
  adapter passes), a shell command that starts a program reading its commands from the
  terminal (a bare `bash`, `python` without a script, a REPL, an editor) is refused: Codex
  types into it with `write_stdin`, which runs no hook, so what it would do cannot be checked.
- Every other tool (reads, searches, ...) is allowed.

Without CONSORT_TASK in its environment the hook is not in a Consort turn and allows everything.
Inside a turn it fails closed: input it cannot read, a task.json it cannot load, or a command line
it cannot parse is refused, with the reason. The guard is the first line only: after the turn,
Consort diffs the working tree against the protected paths, reverts what changed and fails the
attempt, whatever the agent did.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consort.adapters.guard.inline import patch_paths
from consort.adapters.guard.lexer import ShellSyntaxError
from consort.adapters.guard.policy import Breach, GuardPolicy
from consort.adapters.guard.shell import WriteTarget, read_command

ALLOW_EXIT = 0
DENY_EXIT = 2
TASK_VARIABLE = "CONSORT_TASK"
PATH_KEYS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path"}
PATH_KEYS["NotebookEdit"] = "notebook_path"
SHELL_TOOLS = frozenset({"Bash", "shell", "local_shell", "exec_command", "container.exec"})
PATCH_TOOLS = frozenset({"apply_patch", "ApplyPatch"})
# The tools whose calls the hook must see (a Claude Code hook matcher is a regex). MultiEdit is
# gone from current Claude Code (2.1); it stays in the matcher for older versions, which had it.
HOOK_MATCHER = "Write|Edit|MultiEdit|NotebookEdit|Bash"
CODEX_HOOK_MATCHER = "^(Bash|apply_patch)$"
_ADVICE = (
    "Protected files must not change in this turn: leave them as they are (any change is "
    "reverted after the turn and fails the attempt). If one really has to change, finish the "
    "turn and say why in your output; a person can approve an amendment."
)

__all__ = [
    "DENY_EXIT", "HOOK_MATCHER", "Decision", "GuardPolicy", "decide", "fail_closed", "guard"
]  # fmt: skip


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""

    @property
    def exit_code(self) -> int:
        return ALLOW_EXIT if self.allowed else DENY_EXIT


ALLOW = Decision(True)


def guard(
    stdin_text: str,
    env: Mapping[str, str],
    tree: Path | None = None,
    *,
    terminal_programs: bool = True,
) -> Decision:
    """The hook's whole decision: `stdin_text` is the hook JSON, `env` the hook's environment,
    `tree` the turn's working tree (default: the hook's `cwd`); `terminal_programs=False` refuses
    commands that start a program reading commands from the terminal."""
    task_file = env.get(TASK_VARIABLE)
    if not task_file:
        return ALLOW  # not inside a Consort turn
    try:
        payload = json.loads(stdin_text)
    except ValueError as exc:
        return _deny(f"the hook input is not JSON ({exc}); refusing, to be safe")
    if not isinstance(payload, dict) or not isinstance(payload.get("tool_name"), str):
        return _deny("the hook input has no tool_name; refusing, to be safe")
    task_path = Path(task_file)
    try:
        policy = policy_for(task_path, tree or _tree_of(payload, env))
    except Exception as exc:  # fail closed on anything
        return _deny(f"cannot read this turn's task file {task_path}: {exc}")
    return decide(payload, policy, env=env, terminal_programs=terminal_programs)


def policy_for(task_path: Path, tree: Path) -> GuardPolicy:
    from consort.adapters.agents.task import Task

    task = Task.load(task_path)
    # .consort/turns/<turn>/task.json: the state folder is three levels up.
    turn_folder = task_path.absolute().parent
    state_dir = turn_folder.parent.parent if turn_folder.parent.name == "turns" else None
    return GuardPolicy.build(tree, task.protected, task.outputs.values(), state_dir)


def decide(
    payload: Mapping[str, Any],
    policy: GuardPolicy,
    *,
    env: Mapping[str, str] | None = None,
    terminal_programs: bool = True,
) -> Decision:
    tool = str(payload.get("tool_name"))
    if tool not in PATH_KEYS and tool not in SHELL_TOOLS and tool not in PATCH_TOOLS:
        return ALLOW  # reads, searches and every other tool
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return _deny(f"the {tool} call has no tool_input object; refusing, to be safe")
    cwd = Path(str(payload.get("cwd") or policy.tree))
    if tool in PATH_KEYS:
        return _edit(tool, tool_input, cwd, policy)
    command = tool_input.get("command")
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        command = shlex.join(command)  # Codex's shell tool: an argv list
    if not isinstance(command, str):
        return _deny(f"the {tool} call has no command; refusing, to be safe")
    if tool in PATCH_TOOLS:
        return _patch(command, cwd, policy)
    return _bash(command, cwd, policy, env, terminal_programs=terminal_programs)


def _edit(tool: str, tool_input: Mapping[str, Any], cwd: Path, policy: GuardPolicy) -> Decision:
    key = PATH_KEYS[tool]
    path = tool_input.get(key)
    if not isinstance(path, str) or not path:
        return _deny(f"the {tool} call names no {key}; refusing, to be safe")
    breach = policy.breach(path, cwd)
    if breach is None:
        return ALLOW
    return _deny(f"{tool} to {breach.path} refused: it is protected by {breach.rule}.")


def _bash(
    command: str,
    cwd: Path,
    policy: GuardPolicy,
    env: Mapping[str, str] | None,
    *,
    terminal_programs: bool,
) -> Decision:
    try:
        reading = read_command(command, cwd, policy.tree, env)
    except ShellSyntaxError as exc:
        return _deny(
            f"cannot read this command ({exc}); a command the guard cannot read is refused"
        )
    except RecursionError:
        return _deny("this command nests too deeply to read; refusing, to be safe")
    if not terminal_programs and reading.terminal_readers:
        program = reading.terminal_readers[0]
        return Decision(
            False,
            f"consort guard: `{program}` refused: it starts an interactive program that reads "
            "its commands from the terminal, and what is typed into it later is never checked. "
            "Run each command as a call of its own (`bash -c '...'`, `python script.py`).",
        )
    for target in reading.targets:
        breach = policy.target_breach(target)
        if breach is not None:
            return _deny(_target_message(target, breach, policy.tree))
    return ALLOW


def _patch(patch: str, cwd: Path, policy: GuardPolicy) -> Decision:
    for path in patch_paths(patch):
        breach = policy.breach(path, cwd)
        if breach is not None:
            where = f"{breach.path}, protected by {breach.rule}"
            return _deny(f"apply_patch refused: it changes {where}.")
    return ALLOW


def _target_message(target: WriteTarget, breach: Breach, tree: Path) -> str:
    shown = target.command if len(target.command) <= 120 else target.command[:117] + "..."
    path = os.path.normpath(target.cwd / target.path)
    relative = os.path.relpath(path, tree) if f"{path}/".startswith(f"{tree}/") else path
    where = breach.path if breach.path == relative else f"{relative} ({breach.path})"
    return f"`{shown}` refused: it would {target.verb} {where}; {_rule_text(breach)}."


def _rule_text(breach: Breach) -> str:
    return breach.rule if breach.rule.startswith("it ") else f"protected by {breach.rule}"


def fail_closed(argv: Sequence[str]) -> str:
    """A shell command that runs `argv` as a hook and refuses the call when it fails: any exit
    other than 0 (allow) or 2 (refuse) — a crash, an import error, a missing interpreter —
    becomes a refusal. Codex lets a call through when its hook fails that way, and has no
    setting to change it (a hook that times out is still let through: Codex's own limit)."""
    script = (
        '"$@"; status=$?; [ "$status" -eq 0 ] && exit 0; [ "$status" -eq 2 ] && exit 2; '
        'echo "consort guard failed (exit $status); refusing, to be safe" >&2; exit 2'
    )
    return shlex.join(["sh", "-c", script, "consort-guard", *argv])


def _deny(reason: str) -> Decision:
    return Decision(False, f"consort guard: {reason} {_ADVICE}")


def _tree_of(payload: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    project_dir = env.get("CLAUDE_PROJECT_DIR")
    if project_dir:
        return Path(project_dir)
    cwd = payload.get("cwd")
    return Path(str(cwd)) if cwd else Path.cwd()
