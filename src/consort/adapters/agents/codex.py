"""The `codex` adapter: OpenAI's Codex CLI, headless.

Each turn runs::

    codex exec --json --sandbox workspace-write --cd <working tree>
               [--model M] [-c model_reasoning_effort="E"] [--add-dir D ...]
               [-c hooks.PreToolUse=[...consort guard...] [--dangerously-bypass-hook-trust]]
               [-c sandbox_workspace_write.network_access=true]   (build turns: the database)
               -- <the turn, in words>

- Unsandboxed by Consort, Codex's own sandbox lets it write only inside the working tree (plus
  `--add-dir` folders: those of the turn's outputs that lie outside it, when the installed version
  has `--add-dir`). In Consort's sandbox (`[agents] sandbox`), Codex's is off
  (`--sandbox danger-full-access`): nested in Consort's bubblewrap it cannot write at all, and
  Consort's sandbox already bounds what the turn reaches.
- The prompt follows `--`: a role prompt with front matter starts with `---`, which Codex would
  otherwise take for an option.
- The guard, by version (read from `codex --version` and `codex exec --help` before each turn):
  0.124-0.128 run a PreToolUse hook given with `-c hooks.PreToolUse=...` as configured; 0.129-0.140
  never run hooks in `exec`; from 0.141 on a hook runs only when the turn passes
  `--dangerously-bypass-hook-trust` (found in `exec --help`), and is skipped silently otherwise.
  Where no hook runs, the post-turn check of the protected paths (which runs whatever the agent)
  is the only guard, and `agent.json` says so. The hook runs `consort guard
  --refuse-terminal-programs` through `guard.fail_closed`: a guard that crashes refuses the call
  (Codex itself lets it through, and has no setting for that; a hook that times out is still let
  through). Terminal programs are refused because what Codex types into a running process with
  `write_stdin` reaches no hook.
- Codex prints no JSON event for a refused call: the refusals are read from its stderr
  (`Command blocked by PreToolUse hook: <reason>. Command: <command>`).
- A network connection is allowed only in build turns (DATABASE_URL set): their tests need
  the branch database.
- Credentials: a `codex login` is found through HOME, or CODEX_HOME (which turns inherit); an API
  key in the environment must be let through with `env_allow`.

The JSONL events (`thread.started`, `turn.started`, `item.started`/`item.updated`/
`item.completed` with items such as `agent_message`, `command_execution` and
`file_change {changes: [{path, kind}]}`, `turn.completed {usage}`, `turn.failed {error}`,
`error {message}`) are parsed after the process ends; the `file_change` items become the edits
recorded in `agent.json`. An `error` *item* is a notice (unknown model metadata, the hook-trust
bypass), kept as a warning; an `error` event or `turn.failed` is a failure, whose message (often
the API's JSON error body) is unwrapped.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consort.adapters import proc
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
    find_program,
    joined_flags,
    prompt_argument,
    role_prompt_for,
    run_headless,
    system_prompt,
    task_prompt,
    tree_path,
)
from consort.adapters.agents.stream import StreamLines, as_int, as_str
from consort.adapters.agents.task import Task, TurnDir
from consort.adapters.guard import CODEX_HOOK_MATCHER, fail_closed
from consort.adapters.guard.inline import patch_paths
from consort.adapters.sandbox.policy import SandboxPolicy
from consort.core.errors import ConsortError

PROGRAM = "codex"
ACTING_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call"})
HOOKS_SINCE = (0, 124, 0)
HOOKS_DROPPED_IN_EXEC = (0, 129, 0)  # from here on, only with the trust flag (0.141+)
HOOK_TRUST_FLAG = "--dangerously-bypass-hook-trust"
HOOK_TIMEOUT_S = 60
PROBE_TIMEOUT_S = 15.0
LOGIN_FIX = (
    "run `codex login` (an API key in the environment must be let through to turns with "
    "env_allow in consort.toml)"
)

PROFILE = CliProfile(
    name="Codex",
    install_hint="install it with `npm install -g @openai/codex`, then log in with `codex login`",
    login_fix=LOGIN_FIX,
    auth_errors=re.compile(
        r"not logged in|please (re-?)?log ?in|log in again|login again|\b401\b|unauthorized|"
        r"token (has )?expired|refresh token|invalid api key|incorrect api key|"
        r"missing bearer|run `?codex login",
        re.IGNORECASE,
    ),
    transient_errors=re.compile(
        r"\b429\b|rate[ _-]?limit|too many requests|overloaded|\b50[0234]\b|server error|"
        r"service unavailable|stream disconnected|connection (reset|refused|error|closed)|"
        r"timed out|temporarily unavailable|high demand",
        re.IGNORECASE,
    ),
)


@dataclass(frozen=True)
class CodexFeatures:
    """What the installed Codex can do, as far as its version and help tell."""

    version: tuple[int, ...] | None
    hooks: bool  # a PreToolUse hook will run in `codex exec`
    add_dir: bool
    hook_trust_flag: bool = False  # `exec` has --dangerously-bypass-hook-trust

    @property
    def version_text(self) -> str:
        return "unknown" if self.version is None else ".".join(map(str, self.version))

    @property
    def guard(self) -> str:
        """How protected writes are stopped in a turn with this version, for the record."""
        if self.hooks:
            how = f" with {HOOK_TRUST_FLAG}" if self.hook_trust_flag else ""
            return (
                f"PreToolUse hook: consort guard (Codex {self.version_text}{how}); post-turn diff"
            )
        return (
            f"post-turn diff only: Codex {self.version_text} runs no PreToolUse hook in exec "
            "(hooks run in 0.124-0.128, and from 0.141 with " + HOOK_TRUST_FLAG + ")"
        )


@dataclass(frozen=True)
class CodexAdapter:
    command: tuple[str, ...] = (PROGRAM,)
    model: str | None = None
    effort: str | None = None
    limits: Limits = field(default_factory=Limits)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    project_root: Path | None = None
    sandbox: SandboxPolicy | None = None  # None: unsandboxed (recorded as such)
    guard_command: tuple[str, ...] = (sys.executable, "-m", "consort", "guard")
    env: Mapping[str, str] = field(default_factory=dict)  # constants for every turn

    def run(
        self, task: Task, turn_dir: TurnDir, workdir: Path, env: Mapping[str, str]
    ) -> TurnOutcome:
        env = with_constants(env, self.env)
        features = detect_features(self.command, env)
        role_prompt = role_prompt_for(task, self.project_root)
        # Codex has no separate system prompt on the command line: the role comes first.
        prompt = prompt_argument(
            system_prompt(role_prompt) + "\n" + task_prompt(task, turn_dir.task_path, role_prompt),
            turn_dir,
        )
        argv = (
            *self.command,
            "exec",
            "--json",
            "--sandbox",
            # Inside Consort's own sandbox Codex's (bubblewrap again) cannot write: Consort's is
            # then the boundary, and Codex's is off.
            "workspace-write" if self.sandbox is None else "danger-full-access",
            "--cd",
            str(workdir),
            *joined_flags([("--model", self.model)]),
            *self._options(task, workdir, env, features),
            "--",
            prompt,
        )
        call = HeadlessCall(
            "codex",
            argv,
            PROFILE,
            parse_stream,
            features.guard,
            self.model,
            None if features.version is None else features.version_text,
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

    def _options(
        self, task: Task, workdir: Path, env: Mapping[str, str], features: CodexFeatures
    ) -> list[str]:
        options: list[str] = []
        if self.effort:
            options += ["-c", f"model_reasoning_effort={json.dumps(self.effort)}"]
        if features.add_dir:
            for folder in sorted({str(p.parent) for p in task.outputs.values()}):
                if tree_path(folder, workdir) == folder:  # outside the working tree
                    options += ["--add-dir", folder]
        if features.hooks:
            options += ["-c", self.hook_override(workdir)]
            if features.hook_trust_flag:
                options.append(HOOK_TRUST_FLAG)
        if env.get("DATABASE_URL"):
            options += ["-c", "sandbox_workspace_write.network_access=true"]
        return options

    def hook_override(self, workdir: Path) -> str:
        """`hooks.PreToolUse=[...]`, a TOML value for `codex -c`, running the guard."""
        command = fail_closed(
            [*self.guard_command, "--tree", str(workdir), "--refuse-terminal-programs"]
        )
        hook = f'{{type = "command", command = {json.dumps(command)}, timeout = {HOOK_TIMEOUT_S}}}'
        return (
            f"hooks.PreToolUse=[{{matcher = {json.dumps(CODEX_HOOK_MATCHER)}, hooks = [{hook}]}}]"
        )


def detect_features(command: tuple[str, ...], env: Mapping[str, str]) -> CodexFeatures:
    """Ask the installed Codex its version (and whether `exec` has `--add-dir`)."""
    if find_program(command[0], env) is None:
        return CodexFeatures(None, hooks=False, add_dir=False)
    version = parse_version(_output([*command, "--version"], env))
    help_text = _output([*command, "exec", "--help"], env)
    trust_flag = HOOK_TRUST_FLAG in help_text
    configured = version is not None and HOOKS_SINCE <= version < HOOKS_DROPPED_IN_EXEC
    return CodexFeatures(
        version,
        hooks=trust_flag or configured,
        add_dir="--add-dir" in help_text,
        hook_trust_flag=trust_flag,
    )


def parse_version(text: str) -> tuple[int, ...] | None:
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    return None if match is None else tuple(int(part) for part in match.groups())


def _output(argv: list[str], env: Mapping[str, str] | None = None) -> str:
    try:
        result = proc.run(
            argv, env=None if env is None else dict(env), timeout=PROBE_TIMEOUT_S, check=False
        )
    except ConsortError:
        return ""
    return result.stdout + result.stderr


# ---- the stream -------------------------------------------------------------------------------


@dataclass
class _Reader:
    workdir: Path
    summary: StreamSummary = field(default_factory=StreamSummary)
    tool_ids: set[str] = field(default_factory=set)

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        summary = self.summary
        if kind == "thread.started":
            summary.session_id = as_str(event.get("thread_id"))
        elif kind == "turn.completed":
            summary.finished = True
            self._usage(event.get("usage"))
        elif kind == "turn.failed":
            summary.finished = True
            summary.is_error = True
            error = event.get("error")
            message = as_str(error.get("message")) if isinstance(error, dict) else None
            summary.errors.append(unwrap_error(message) or "the turn failed without a message")
            self._usage(event.get("usage"))
        elif kind == "error":
            message = unwrap_error(as_str(event.get("message")))
            if message and message not in summary.errors:
                summary.errors.append(message)
        elif kind in ("item.started", "item.completed") and isinstance(event.get("item"), dict):
            item = event["item"]
            if (item.get("type") or item.get("item_type")) in ACTING_ITEMS:
                self.tool_ids.add(str(item.get("id", len(self.tool_ids))))
                summary.tool_calls = len(self.tool_ids)
            if kind == "item.completed":
                self._item(item)

    def _item(self, item: dict[str, Any]) -> None:
        item_type = item.get("type") or item.get("item_type")
        if item_type == "agent_message":
            text = as_str(item.get("text"))
            if text is not None:
                self.summary.last_text = text
                self.summary.result = text
        elif item_type == "error":
            # An error *item* is a notice that does not stop the turn (unknown model metadata,
            # the hook-trust bypass); a failure comes as an `error` event or `turn.failed`.
            message = as_str(item.get("message"))
            if message and message not in self.summary.warnings:
                self.summary.warnings.append(message)
        elif item_type == "file_change":
            status = item.get("status")
            done = status in (None, "completed")
            changes = item.get("changes")
            for change in changes if isinstance(changes, list) else []:
                if isinstance(change, dict) and isinstance(change.get("path"), str):
                    kind = as_str(change.get("kind")) or "change"
                    self.summary.edits.append(
                        ReportedEdit(
                            tree_path(change["path"], self.workdir),
                            f"file_change:{kind}",
                            EditStatus.DONE if done else EditStatus.FAILED,
                            None if done else f"status {status}",
                        )
                    )

    def _usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        for key, value in usage.items():
            number = as_int(value)
            if number is not None:
                self.summary.usage[key] = self.summary.usage.get(key, 0) + number


def parse_stream(lines: StreamLines, workdir: Path, stderr: str = "") -> StreamSummary:
    """What `codex exec --json` output (and, for refused calls, its stderr) says about the run."""
    reader = _Reader(workdir)
    for event in lines.events:
        reader.event(event)
    reader.summary.malformed = lines.malformed
    reader.summary.malformed_samples = lines.malformed_samples
    reader.summary.refused = refusals(stderr, workdir)
    # A tool call that failed (a patch that does not apply) is only a log line too.
    reader.summary.warnings += [f"a tool call failed: {text}" for text in failed_calls(stderr)]
    return reader.summary


def unwrap_error(message: str | None) -> str | None:
    """The message inside an API error body (`{"error": {"message": ...}}`), else as given."""
    if not message or not message.lstrip().startswith("{"):
        return message
    try:
        body = json.loads(message)
    except ValueError:
        return message
    error = body.get("error") if isinstance(body, dict) else None
    inner = error.get("message") if isinstance(error, dict) else None
    if isinstance(inner, str) and inner:
        return inner
    return message


_LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\dT\S+\s+[A-Z]+\s", re.MULTILINE)
_BLOCKED = "Command blocked by PreToolUse hook: "
_COMMAND = ". Command: "


_ROUTER_ERROR = "codex_core::tools::router: error="


def _log_records(stderr: str) -> list[str]:
    starts = [m.start() for m in _LOG_RECORD.finditer(stderr)]
    ends = [*starts[1:], len(stderr)][: len(starts)]
    return [stderr[begin:end] for begin, end in zip(starts, ends, strict=True)]


def failed_calls(stderr: str) -> list[str]:
    """The tool calls Codex logged as failed, other than those a hook refused."""
    found = []
    for record in _log_records(stderr):
        at = record.find(_ROUTER_ERROR)
        if at >= 0 and _BLOCKED not in record:
            found.append(" ".join(record[at + len(_ROUTER_ERROR) :].split())[:300])
    return found


def refusals(stderr: str, workdir: Path) -> list[Refusal]:
    """The calls a hook refused, from Codex's log lines on stderr (no JSON event says so)."""
    found: list[Refusal] = []
    for record in _log_records(stderr):
        at = record.find(_BLOCKED)
        if at < 0:
            continue
        text = record[at + len(_BLOCKED) :].strip()
        split = text.rfind(_COMMAND)
        reason, command = (text, "")
        if split >= 0:
            reason, command = text[:split], text[split + len(_COMMAND) :]
        if command.lstrip().startswith("*** Begin Patch"):
            paths = [tree_path(p, workdir) for p in patch_paths(command)]
            found.append(Refusal("apply_patch", ", ".join(paths), reason.strip()))
        else:
            found.append(Refusal("Bash", command.strip(), reason.strip()))
    return found


# ---- doctor -----------------------------------------------------------------------------------


def login_status(
    program: str,
    env: Mapping[str, str] | None = None,
    turn_env: Mapping[str, str] | None = None,
) -> tuple[str, bool | None]:
    """(what to show, logged in?) from `codex login status`, without printing what it printed
    (it may show part of a key). With `turn_env`, asked in the environment a turn gets; an API
    key in it counts as a login, although `codex login status` says "Not logged in" then."""
    if turn_env is not None:
        env = turn_env
        key = environment_key(turn_env)
        if key is not None:
            return f"an API key in the turn's environment ({key})", True
    try:
        result = proc.run(
            [program, "login", "status"],
            env=None if env is None else dict(env),
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except ConsortError:
        return "unknown (`codex login status` did not answer)", None
    text = (result.stdout + result.stderr).lower()
    if result.returncode != 0 or "not logged in" in text:
        return f"not logged in: {LOGIN_FIX}", False
    if "chatgpt" in text:
        return "logged in (ChatGPT account)", True
    if "api key" in text:
        return "logged in (API key)", True
    return "logged in", True


def environment_key(env: Mapping[str, str] | None = None) -> str | None:
    source = os.environ if env is None else env
    return next((name for name in ("CODEX_API_KEY", "OPENAI_API_KEY") if source.get(name)), None)
