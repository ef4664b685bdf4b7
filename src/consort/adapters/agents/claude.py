"""The `claude` adapter: Claude Code, headless.

Each turn runs::

    claude -p <the turn, in words> --output-format stream-json --verbose
           --permission-mode acceptEdits --append-system-prompt <role prompt + protocol>
           --settings <turn>/claude-settings.json --setting-sources project
           [--model M] [--effort E]

- `--settings` adds a PreToolUse hook for Write|Edit|NotebookEdit|Bash (and MultiEdit, which only
  older versions have) that runs
  `<this python> -m consort guard --tree <working tree>`: a protected write is refused before
  it happens (exit 2, the reason goes back to the model). The hook has `"onFailure": "block"`:
  a guard that crashes, cannot start or times out refuses the call instead of letting it through.
  The settings also allow Bash, which headless mode would otherwise refuse, so that agents can
  run the tests (the guard reads each command), and name the turn's folder and the folders of
  its inputs and outputs as `permissions.additionalDirectories`: in `-p` mode Claude Code's file
  tools refuse every path outside the working directories.
- `--setting-sources project`: the project's `.claude/` (its agents, commands and settings) is
  used, the user's personal settings are not, so that a turn behaves the same on every machine.
  The one user setting a turn needs to log in, `apiKeyHelper`, is copied into the turn's
  settings.
- The working tree is the process's current folder; CONSORT_TASK and the other protocol
  variables are in its environment, which `build_agent_env` built from nothing: a login made
  with `claude /login` is found through HOME (or CLAUDE_CONFIG_DIR, which turns inherit); an API
  key (ANTHROPIC_API_KEY) or a long-lived token (CLAUDE_CODE_OAUTH_TOKEN) must be let through
  with `env_allow` in consort.toml. CLAUDE_CODE_MAX_RETRIES is set (unless the agent's `env`
  table sets it): the CLI retries a rejected login for minutes otherwise; Consort retries
  transient errors itself.

The stream-json output (`system`/`init`, `assistant`, `user`, and the final `result` with
`total_cost_usd`, `usage`, `duration_ms`, `num_turns`, `is_error`, `subtype`, `api_error_status`)
is parsed after the process ends; see `adapters.agents.headless` for the retries, the login check
and `agent.json`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consort.adapters.agents.base import TurnOutcome, with_constants
from consort.adapters.agents.command import Limits, sandbox_for
from consort.adapters.agents.headless import (
    CliProfile,
    EditStatus,
    HeadlessCall,
    Refusal,
    ReportedEdit,
    RetryPolicy,
    StreamSummary,
    joined_flags,
    program_version,
    prompt_argument,
    role_prompt_for,
    run_headless,
    system_prompt,
    task_prompt,
    tree_path,
)
from consort.adapters.agents.stream import StreamLines, as_float, as_int, as_str, text_of
from consort.adapters.agents.task import Task, TurnDir
from consort.adapters.guard import HOOK_MATCHER
from consort.adapters.sandbox.policy import SandboxPolicy
from consort.core.fsutil import atomic_write_text

PROGRAM = "claude"
SETTINGS_FILE = "claude-settings.json"
HOOK_TIMEOUT_S = 60
# The CLI's own retries of one API call; Consort retries transient errors itself, with backoff.
MAX_CLI_RETRIES = "2"
RETRIES_VARIABLE = "CLAUDE_CODE_MAX_RETRIES"
CONFIG_DIR_VARIABLE = "CLAUDE_CONFIG_DIR"
# MultiEdit is gone from current versions; an older CLI's MultiEdit is still read and guarded.
EDIT_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path"}
EDIT_TOOLS["NotebookEdit"] = "notebook_path"
LOGIN_FIX = (
    "run `claude /login` (or `claude setup-token` for a long-lived token, passed to turns "
    'with env_allow = ["CLAUDE_CODE_OAUTH_TOKEN"] in consort.toml)'
)

PROFILE = CliProfile(
    name="Claude Code",
    install_hint="install it with `npm install -g @anthropic-ai/claude-code`, then log in "
    "with `claude /login`",
    login_fix=LOGIN_FIX,
    auth_errors=re.compile(
        r"invalid api key|please run /login|run /login|authentication_error|"
        r"oauth token (has )?expired|token has expired|not logged in|invalid bearer token|"
        r"invalid x-api-key|api error: 401|\b401 unauthorized",
        re.IGNORECASE,
    ),
    transient_errors=re.compile(
        r"overloaded|rate[ _-]?limit|api error: \(?(429|5\d\d)|\b529\b|internal server error|"
        r"service unavailable|bad gateway|gateway timeout|request timed out|econnreset|"
        r"econnrefused|etimedout|socket hang up|connection error|network error|fetch failed|"
        r'"type":\s*"api_error"',
        re.IGNORECASE,
    ),
)


@dataclass(frozen=True)
class ClaudeAdapter:
    command: tuple[str, ...] = (PROGRAM,)  # the program (and leading arguments) to run
    model: str | None = None
    effort: str | None = None
    limits: Limits = field(default_factory=Limits)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    project_root: Path | None = None  # where the role prompts live; None: Consort's own
    sandbox: SandboxPolicy | None = None  # None: unsandboxed (recorded as such)
    guard_command: tuple[str, ...] = (sys.executable, "-m", "consort", "guard")
    env: Mapping[str, str] = field(default_factory=dict)  # constants for every turn

    def run(
        self, task: Task, turn_dir: TurnDir, workdir: Path, env: Mapping[str, str]
    ) -> TurnOutcome:
        env = with_constants({RETRIES_VARIABLE: MAX_CLI_RETRIES, **env}, self.env)
        role_prompt = role_prompt_for(task, self.project_root)
        settings = turn_dir.path / SETTINGS_FILE
        content = self.settings(workdir, task, turn_dir, user_api_key_helper(env))
        atomic_write_text(settings, json.dumps(content, indent=2) + "\n")
        prompt = prompt_argument(task_prompt(task, turn_dir.task_path, role_prompt), turn_dir)
        argv = (
            *self.command,
            "-p",
            prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
            "--append-system-prompt",
            system_prompt(role_prompt),
            "--settings",
            str(settings),
            "--setting-sources",
            "project",
            *joined_flags([("--model", self.model), ("--effort", self.effort)]),
        )
        version = program_version(self.command, env)
        call = HeadlessCall(
            "claude",
            argv,
            PROFILE,
            parse_stream,
            "PreToolUse hook: consort guard (blocks when the guard fails); post-turn diff",
            self.model,
            version,
        )
        return run_headless(
            call,
            turn_dir=turn_dir,
            workdir=workdir,
            env=env,
            limits=self.limits,
            retry=self.retry,
            sandbox=sandbox_for(
                self.sandbox, self.command, task, turn_dir=turn_dir, workdir=workdir, env=env
            ),
        )

    def settings(
        self,
        workdir: Path,
        task: Task | None = None,
        turn_dir: TurnDir | None = None,
        api_key_helper: str | None = None,
    ) -> dict[str, Any]:
        """The turn's settings file: the guard as a PreToolUse hook that blocks when it fails;
        Bash allowed; the turn's folders outside the tree reachable by the file tools."""
        hook = shlex.join([*self.guard_command, "--tree", str(workdir)])
        entry = {"type": "command", "command": hook, "timeout": HOOK_TIMEOUT_S}
        entry["onFailure"] = "block"
        permissions: dict[str, Any] = {"allow": ["Bash"]}
        folders = turn_folders(workdir, task, turn_dir)
        if folders:
            permissions["additionalDirectories"] = folders
        settings: dict[str, Any] = {
            "hooks": {"PreToolUse": [{"matcher": HOOK_MATCHER, "hooks": [entry]}]},
            "permissions": permissions,
        }
        if api_key_helper:
            settings["apiKeyHelper"] = api_key_helper
        return settings


def turn_folders(workdir: Path, task: Task | None, turn_dir: TurnDir | None) -> list[str]:
    """The folders a turn reads or writes outside its working tree: the turn folder (task.json,
    schemas), and the folder of each input and output."""
    folders: set[str] = set()
    if turn_dir is not None:
        folders.add(str(turn_dir.path.absolute()))
    if task is not None:
        for path in (*task.inputs.values(), *task.outputs.values()):
            absolute = Path(path).absolute()
            folders.add(str(absolute if absolute.is_dir() else absolute.parent))
    outside = {f for f in folders if tree_path(f, workdir) == f}
    # A folder inside another listed one adds nothing.
    return sorted(f for f in outside if not any(_inside(f, other) for other in outside))


def _inside(path: str, folder: str) -> bool:
    return path != folder and path.startswith(folder.rstrip(os.sep) + os.sep)


def user_api_key_helper(env: Mapping[str, str]) -> str | None:
    """The `apiKeyHelper` of the user's Claude Code settings (a command that prints a key, not a
    key), which `--setting-sources project` would hide from the turn."""
    config = env.get(CONFIG_DIR_VARIABLE) or os.path.join(env.get("HOME") or "~", ".claude")
    try:
        data = json.loads(Path(os.path.expanduser(config), "settings.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    helper = data.get("apiKeyHelper") if isinstance(data, dict) else None
    return helper if isinstance(helper, str) and helper.strip() else None


# ---- the stream -------------------------------------------------------------------------------


@dataclass
class _Pending:
    tool: str
    path: str


@dataclass
class _Reader:
    workdir: Path
    summary: StreamSummary = field(default_factory=StreamSummary)
    pending: dict[str, _Pending] = field(default_factory=dict)  # tool_use id -> edit
    calls: dict[str, _Pending] = field(default_factory=dict)  # tool_use id -> any tool call

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.summary.session_id = as_str(event.get("session_id"))
            self.summary.model = as_str(event.get("model"))
        elif kind == "assistant":
            self._assistant(event.get("message"))
        elif kind == "user":
            self._user(event.get("message"))
        elif kind == "result":
            self._result(event)

    def _assistant(self, message: object) -> None:
        if not isinstance(message, dict):
            return
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                self.summary.last_text = block["text"]
            if block.get("type") == "tool_use":
                self.summary.tool_calls += 1
                self.calls[str(block.get("id"))] = _Pending(
                    str(block.get("name")), _call_target(block.get("input"))
                )
            if block.get("type") == "tool_use" and block.get("name") in EDIT_TOOLS:
                tool = str(block["name"])
                tool_input = block.get("input")
                path = tool_input.get(EDIT_TOOLS[tool]) if isinstance(tool_input, dict) else None
                if isinstance(path, str) and isinstance(block.get("id"), str):
                    self.pending[block["id"]] = _Pending(tool, path)

    def _user(self, message: object) -> None:
        if not isinstance(message, dict):
            return
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            call = self.calls.pop(str(block.get("tool_use_id")), None)
            text = text_of(block.get("content"))
            if call is not None and block.get("is_error") is True and _REFUSED.search(text):
                file_tool = call.tool in EDIT_TOOLS and call.path
                target = tree_path(call.path, self.workdir) if file_tool else call.path
                self.summary.refused.append(Refusal(call.tool, target, _guard_reason(text)))
            pending = self.pending.pop(str(block.get("tool_use_id")), None)
            if pending is None:
                continue
            detail = text_of(block.get("content")) or None
            status = EditStatus.DONE
            if block.get("is_error") is True:
                refused = detail is not None and _REFUSED.search(detail)
                status = EditStatus.REFUSED if refused else EditStatus.FAILED
            self._edit(pending, status, None if status is EditStatus.DONE else detail)

    def _result(self, event: dict[str, Any]) -> None:
        summary = self.summary
        summary.finished = True
        summary.is_error = event.get("is_error") is True
        status = as_int(event.get("api_error_status"))
        if status is not None:
            summary.errors.append(f"API error: {status}")
        summary.subtype = as_str(event.get("subtype"))
        summary.result = as_str(event.get("result"))
        summary.cost_usd = as_float(event.get("total_cost_usd"))
        summary.duration_ms = as_int(event.get("duration_ms"))
        summary.num_turns = as_int(event.get("num_turns"))
        summary.session_id = as_str(event.get("session_id")) or summary.session_id
        usage = event.get("usage")
        if isinstance(usage, dict):
            summary.usage = {k: v for k, v in usage.items() if as_int(v) is not None}
        if summary.is_error and summary.result:
            summary.errors.append(summary.result)

    def _edit(self, pending: _Pending, status: EditStatus, detail: str | None) -> None:
        path = tree_path(pending.path, self.workdir)
        self.summary.edits.append(ReportedEdit(path, pending.tool, status, detail))

    def finish(self, lines: StreamLines) -> StreamSummary:
        for pending in self.pending.values():  # a tool call whose result never came
            self._edit(pending, EditStatus.UNKNOWN, None)
        self.summary.malformed = lines.malformed
        self.summary.malformed_samples = lines.malformed_samples
        return self.summary


_REFUSED = re.compile(r"hook|consort guard", re.IGNORECASE)


def _call_target(tool_input: object) -> str:
    """The path or command a tool call is about, for the record."""
    if not isinstance(tool_input, dict):
        return ""
    for key in ("file_path", "notebook_path", "command", "path"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value
    return ""


def _guard_reason(text: str) -> str:
    """The guard's own words in a refused call's result (after Claude Code's hook prefix)."""
    at = text.find("consort guard:")
    return (text[at:] if at >= 0 else text).strip()


def parse_stream(lines: StreamLines, workdir: Path, stderr: str = "") -> StreamSummary:
    """What Claude Code's stream-json output says about the run (its stderr adds nothing)."""
    reader = _Reader(workdir)
    for event in lines.events:
        reader.event(event)
    return reader.finish(lines)


# ---- doctor -----------------------------------------------------------------------------------


def auth_status(program: str, env: Mapping[str, str]) -> dict[str, Any] | None:
    """What `claude auth status --json` says in `env` (the reliable login check), or None when
    this CLI cannot say."""
    from consort.adapters import proc
    from consort.core.errors import ConsortError

    try:
        result = proc.run(
            [program, "auth", "status", "--json"], env=dict(env), timeout=30.0, check=False
        )
    except ConsortError:
        return None
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return None
    return data if isinstance(data, dict) and "loggedIn" in data else None


def _turn_login(
    status: Mapping[str, Any], source: Mapping[str, str], turn_env: Mapping[str, str]
) -> tuple[str, bool]:
    if status.get("loggedIn") is True:
        method = as_str(status.get("authMethod")) or "a login"
        return f"logged in as a turn sees it ({method})", True
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"):
        if source.get(name) and name not in turn_env:
            return (
                f"turns are not logged in: {name} is set here but turns do not get it "
                f'(add env_allow = ["{name}"] in consort.toml)',
                False,
            )
    return f"turns are not logged in: {LOGIN_FIX}", False


def login_status(
    program: str = PROGRAM,
    env: Mapping[str, str] | None = None,
    turn_env: Mapping[str, str] | None = None,
) -> tuple[str, bool | None]:
    """(what to show, logged in?) — never what the credentials say.

    With `turn_env` (the environment a turn gets), the CLI is asked in that environment, so the
    answer is the turn's: a key in Consort's environment that turns do not inherit is no login.
    """
    source = os.environ if env is None else env
    status = auth_status(program, turn_env) if turn_env is not None else None
    if status is not None and turn_env is not None:
        return _turn_login(status, source, turn_env)
    for name, what in (
        ("ANTHROPIC_API_KEY", "an API key"),
        ("CLAUDE_CODE_OAUTH_TOKEN", "a long-lived token"),
    ):
        if source.get(name):
            return (
                f"{what} in the environment ({name}; turns get it only with "
                f'env_allow = ["{name}"] in consort.toml)',
                True,
            )
    home = Path(source.get("HOME") or Path.home())
    config = Path(source.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    if (config / ".credentials.json").is_file():
        return f"logged in (credentials in {config})", True
    if sys.platform == "darwin":
        return "no credentials file: on macOS the login lives in the Keychain", None
    return f"not logged in: {LOGIN_FIX}", False
