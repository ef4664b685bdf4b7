"""What the adapters for headless coding-agent CLIs (Claude Code, Codex) share.

- the prompt of a turn, rendered from task.json (the agent protocol stays the contract: the task
  file is there too, and the prompt says where);
- one run of the CLI with retries: each attempt runs through `run_agent_process` (so the
  inactivity and wall-clock limits apply), its JSON Lines stdout is parsed afterwards, and the
  failure is classified: a transient API error (overload, rate limit, 5xx, dropped connection) is
  retried with exponential backoff (each retried attempt's output is kept as `stdout.N` and
  `stderr.N` in the turn folder; the working tree keeps what it changed), a missing or expired
  login fails at once with the command that fixes it, anything else is a failed attempt;
- two problems are the user's to fix, not the agent's failed attempts, and stop the run with a
  `UsageError` (exit 2) so that no attempt is spent on them: the CLI is not installed, or its
  login is missing or expired while the agent has not yet called a single tool (so it changed
  nothing). A login that expires mid-turn ends the turn as a failed attempt instead, so that
  Consort's post-turn checks still look at what the agent changed;
- the record of what the agent reported (final message, cost, tokens, duration, the files it says
  it edited, refused edits, every attempt), written to `agent.json` in the turn folder, beside
  the git diff Consort takes itself. It is the agent's say-so, kept for people and for the log;
  no decision rests on it.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import NoReturn

from consort.adapters.agents.base import TurnOutcome
from consort.adapters.agents.command import Limits, run_agent_process
from consort.adapters.agents.stream import StreamLines, read_jsonl
from consort.adapters.agents.task import AgentReport, RefusedCall, Task, TurnDir
from consort.adapters.sandbox.policy import SandboxedCommand
from consort.core.errors import UsageError
from consort.core.fsutil import atomic_write_json, atomic_write_text
from consort.core.layout import STATE_GLOB

RECORD_FILE = "agent.json"
PROMPT_FILE = "prompt.md"
MAX_PROMPT_ARGUMENT_BYTES = 100_000  # Linux caps one argument at 128 KiB
STDERR_TAIL = 4000
MESSAGE_WIDTH = 300
DEFAULT_RETRIES = 2
DEFAULT_RETRY_BACKOFF_S = 15.0
MAX_RETRY_BACKOFF_S = 300.0
VERSION_TIMEOUT_S = 15.0


class FailureKind(StrEnum):
    NONE = "none"
    AUTH = "auth"  # not logged in, or the login expired: no retry, the user must log in
    TRANSIENT = "transient"  # overload, rate limit, 5xx, network: worth another attempt
    FAILED = "failed"  # anything else: a failed attempt


class EditStatus(StrEnum):
    DONE = "done"  # the tool reported success
    REFUSED = "refused"  # a hook (Consort's guard) refused it
    FAILED = "failed"  # the tool reported an error
    UNKNOWN = "unknown"  # no result seen (the run ended first)


@dataclass(frozen=True)
class ReportedEdit:
    path: str  # relative to the working tree when inside it
    tool: str  # Write, Edit, file_change:update, ...
    status: EditStatus
    detail: str | None = None


@dataclass(frozen=True)
class Refusal:
    """A tool call Consort's guard refused before it ran."""

    tool: str  # Write, Bash, apply_patch, ...
    target: str  # the path, or the command
    reason: str  # what the guard said


@dataclass
class StreamSummary:
    """What one attempt's stream said, whatever the CLI."""

    session_id: str | None = None
    model: str | None = None
    finished: bool = False  # a final result (Claude) / turn.completed (Codex) was seen
    is_error: bool = False  # the final result was an error
    subtype: str | None = None
    result: str | None = None  # the final message
    cost_usd: float | None = None
    usage: dict[str, int] = field(default_factory=dict)
    duration_ms: int | None = None
    num_turns: int | None = None
    edits: list[ReportedEdit] = field(default_factory=list)
    tool_calls: int = 0  # tool calls the agent made (any tool)
    errors: list[str] = field(default_factory=list)  # error texts the stream carried
    warnings: list[str] = field(default_factory=list)  # notices that are not failures
    refused: list[Refusal] = field(default_factory=list)  # calls the guard refused
    last_text: str | None = None  # the agent's last message, for error classification
    malformed: int = 0
    malformed_samples: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CliProfile:
    """How one CLI is installed, logged into, and how its errors read."""

    name: str  # "Claude Code"
    install_hint: str
    login_fix: str
    auth_errors: re.Pattern[str]
    transient_errors: re.Pattern[str]


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = DEFAULT_RETRIES  # further attempts after a transient error
    backoff_s: float = DEFAULT_RETRY_BACKOFF_S  # the first wait; doubled each time
    max_backoff_s: float = MAX_RETRY_BACKOFF_S

    def delay(self, attempt: int) -> float:
        return float(min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s))


@dataclass(frozen=True)
class AttemptRecord:
    number: int
    exit_code: int
    duration_s: float
    killed: str | None
    failure: FailureKind
    message: str | None
    stdout: str  # file name in the turn folder
    stderr: str


@dataclass
class AgentRecord:
    """agent.json: the agent's own report of its turn (Consort's checks live in result.json)."""

    adapter: str
    status: str
    message: str | None
    model: str | None
    session_id: str | None
    result: str | None
    cost_usd: float | None
    usage: dict[str, int]
    duration_ms: int | None
    num_turns: int | None
    edits: list[ReportedEdit]
    malformed_lines: int
    malformed_samples: list[str]
    guard: str
    attempts: list[AttemptRecord]
    cli_version: str | None = None  # what `<cli> --version` said
    refused: list[Refusal] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class HeadlessCall:
    """One turn's invocation of a CLI, ready to run."""

    adapter: str  # "claude" / "codex"
    argv: tuple[str, ...]
    profile: CliProfile
    parse: Callable[[StreamLines, Path, str], StreamSummary]  # stdout, tree, stderr
    guard: str  # how protected writes are stopped before they happen, for the record
    model: str | None = None
    version: str | None = None


def run_headless(
    call: HeadlessCall,
    *,
    turn_dir: TurnDir,
    workdir: Path,
    env: Mapping[str, str],
    limits: Limits,
    retry: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    sandbox: SandboxedCommand | None = None,
) -> TurnOutcome:
    started = time.monotonic()
    turn_dir.path.mkdir(parents=True, exist_ok=True)
    if find_program(call.argv[0], env) is None:
        _not_installed(call, turn_dir, env)
    attempts: list[AttemptRecord] = []
    number = 0
    while True:
        number += 1
        outcome = run_agent_process(
            call.argv,
            cwd=workdir,
            env=env,
            stdout_path=turn_dir.stdout_path,
            stderr_path=turn_dir.stderr_path,
            limits=limits,
            sandbox=sandbox,
        )
        summary = call.parse(read_jsonl(outcome.stdout_path), workdir, _text(outcome.stderr_path))
        kind, message = classify(summary, outcome, _tail(outcome.stderr_path), call.profile)
        stdout_name, stderr_name = turn_dir.stdout_path.name, turn_dir.stderr_path.name
        retrying = kind is FailureKind.TRANSIENT and number <= retry.retries
        if retrying:
            # Keep this attempt's output beside the next one's.
            stdout_name, stderr_name = f"{stdout_name}.{number}", f"{stderr_name}.{number}"
            os.replace(turn_dir.stdout_path, turn_dir.path / stdout_name)
            os.replace(turn_dir.stderr_path, turn_dir.path / stderr_name)
        attempts.append(
            AttemptRecord(
                number,
                outcome.exit_code,
                round(outcome.duration_s, 3),
                None if outcome.killed is None else outcome.killed.value,
                kind,
                message,
                stdout_name,
                stderr_name,
            )
        )
        if not retrying:
            break
        sleep(retry.delay(number))
    record = AgentRecord(
        adapter=call.adapter,
        status="",
        message=None,
        model=summary.model or call.model,
        session_id=summary.session_id,
        result=summary.result,
        cost_usd=summary.cost_usd,
        usage=summary.usage,
        duration_ms=summary.duration_ms,
        num_turns=summary.num_turns,
        edits=summary.edits,
        malformed_lines=summary.malformed,
        malformed_samples=summary.malformed_samples,
        guard=call.guard,
        attempts=attempts,
        cli_version=call.version,
        refused=summary.refused,
        warnings=summary.warnings,
    )
    if kind is FailureKind.AUTH and summary.tool_calls == 0:
        problem = f"{call.profile.name} is not logged in, or its login expired ({message})"
        record.status, record.message = "login-needed", problem
        write_record(turn_dir, record)
        raise UsageError(problem, fix=call.profile.login_fix)
    final = _final_outcome(
        call.profile, outcome=outcome, kind=kind, message=message, attempts=number, started=started
    )
    if final.error is not None and final.error != outcome.error:
        with turn_dir.stderr_path.open("a", encoding="utf-8") as err:
            err.write(f"consort: {final.error}\n")
    record.status, record.message = _status(final, kind), final.error or message
    write_record(turn_dir, record)
    report = AgentReport(
        adapter=call.adapter,
        program=call.profile.name,
        version=call.version,
        guard=call.guard,
        refused=tuple(
            RefusedCall(tool=r.tool, target=r.target, reason=r.reason) for r in summary.refused
        ),
    )
    return replace(final, agent=report)


def classify(
    summary: StreamSummary, outcome: TurnOutcome, stderr_tail: str, profile: CliProfile
) -> tuple[FailureKind, str | None]:
    """Whether an attempt succeeded and, if not, what kind of failure it was, and its message."""
    if outcome.killed is not None:
        return FailureKind.FAILED, f"stopped by Consort ({outcome.killed.value} timeout)"
    if outcome.error is not None:
        return FailureKind.FAILED, outcome.error
    if outcome.exit_code == 0 and summary.finished and not summary.is_error:
        return FailureKind.NONE, None
    texts = [summary.result if summary.is_error else None, *summary.errors, summary.last_text]
    text = "\n".join(t for t in (*texts, stderr_tail) if t)
    for kind, pattern in (
        (FailureKind.AUTH, profile.auth_errors),
        (FailureKind.TRANSIENT, profile.transient_errors),
    ):
        match = pattern.search(text)
        if match is not None:
            return kind, _line_at(text, match.start())
    return FailureKind.FAILED, _failure_message(summary, outcome, stderr_tail)


def _failure_message(summary: StreamSummary, outcome: TurnOutcome, stderr_tail: str) -> str:
    if summary.is_error:
        text = (summary.errors[-1] if summary.errors else None) or summary.result or summary.subtype
        return _short(text or "it reported an error without a message")
    if summary.errors:
        return _short(summary.errors[-1])
    if outcome.exit_code == 0:
        return "it exited 0 without a final result"
    last = stderr_tail.strip().splitlines()
    return _short(last[-1]) if last else f"it exited {outcome.exit_code}"


def _final_outcome(
    profile: CliProfile,
    *,
    outcome: TurnOutcome,
    kind: FailureKind,
    message: str | None,
    attempts: int,
    started: float,
) -> TurnOutcome:
    total = replace(outcome, duration_s=time.monotonic() - started)
    if kind is FailureKind.AUTH:
        return replace(
            total,
            error=f"{profile.name} is not logged in, or its login expired ({message}): "
            f"{profile.login_fix}",
        )
    if kind is FailureKind.TRANSIENT:
        return replace(
            total,
            error=f"{profile.name} hit a transient API error on {attempts} attempt(s), the last: "
            f"{message}; try again later",
        )
    if kind is FailureKind.FAILED and outcome.exit_code == 0 and outcome.ok:
        # It exited 0 but reported an error (or no result): never a success.
        return replace(total, error=f"{profile.name} reported a failure: {message}")
    return total


def _status(outcome: TurnOutcome, kind: FailureKind) -> str:
    if outcome.killed is not None:
        return f"killed ({outcome.killed.value})"
    if kind is FailureKind.NONE and outcome.ok:
        return "ok"
    return {FailureKind.AUTH: "login-needed", FailureKind.TRANSIENT: "transient-error"}.get(
        kind, "failed"
    )


def _not_installed(call: HeadlessCall, turn_dir: TurnDir, env: Mapping[str, str]) -> NoReturn:
    problem = (
        f"{call.profile.name} (`{call.argv[0]}`) is not installed, or not on the agent's PATH "
        f"({env.get('PATH', '')})"
    )
    atomic_write_text(turn_dir.stdout_path, "")
    atomic_write_text(turn_dir.stderr_path, f"consort: {problem}\n")
    record = AgentRecord(
        call.adapter, "not-installed", problem, call.model, None, None, None, {}, None, None,
        [], 0, [], call.guard, [], call.version,
    )  # fmt: skip
    write_record(turn_dir, record)
    raise UsageError(problem, fix=call.profile.install_hint)


def write_record(turn_dir: TurnDir, record: AgentRecord) -> None:
    atomic_write_json(turn_dir.path / RECORD_FILE, asdict(record))


def find_program(program: str, env: Mapping[str, str] | None = None) -> str | None:
    """The executable `program` resolves to on the (agent's) PATH, or None."""
    if os.sep in program:
        return program if os.access(program, os.X_OK) and Path(program).is_file() else None
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    return shutil.which(program, path=path)


def program_version(
    program: str | Sequence[str], env: Mapping[str, str] | None = None
) -> str | None:
    """The first line `program --version` prints, or None (`program` may be a command with
    leading arguments)."""
    from consort.adapters import proc
    from consort.core.errors import ConsortError

    try:
        result = proc.run(
            [program, "--version"] if isinstance(program, str) else [*program, "--version"],
            env=None if env is None else dict(env),
            timeout=VERSION_TIMEOUT_S,
            check=False,
        )
    except ConsortError:
        return None
    lines = (result.stdout or result.stderr).strip().splitlines()
    return _short(lines[0]) if result.ok and lines else None


MAX_STDERR_READ = 1_000_000


def _text(path: Path) -> str:
    """The start of a stderr file (a CLI's refusal notices are there), bounded."""
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_STDERR_READ).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - STDERR_TAIL))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _line_at(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return _short(text[start : len(text) if end < 0 else end])


def _short(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= MESSAGE_WIDTH else one_line[: MESSAGE_WIDTH - 3] + "..."


def tree_path(path: str, workdir: Path) -> str:
    """`path` relative to the working tree when it lies inside it, else as given."""
    absolute = os.path.normpath(os.path.join(workdir, path))
    root = os.path.normpath(workdir)
    if absolute == root or absolute.startswith(root + os.sep):
        return os.path.relpath(absolute, root)
    return path


# ---- the prompt ------------------------------------------------------------------------------

PROTOCOL = """\
## How a Consort turn works

You are one role agent, working one turn that Consort (an orchestrator) gave you. A program, not
you, decides what happens next: do this turn's job and nothing else.

- Your task is in task.json, at the path in the CONSORT_TASK environment variable; the prompt
  repeats it. Read every input it names before you start.
- Write each output to exactly the path given for it, valid against its schema.
- Change only files matching the turn's writable globs. Never change a protected path, nor
  anything under `.consort/` except your outputs: a hook refuses such edits, and any change that
  slips through is reverted after the turn and fails the attempt.
- Do not commit, switch branches, stash, or approve anything: Consort does that.
- When you are done, stop. Consort then checks your work and runs the tests itself; only its run
  counts.
"""


def system_prompt(role_prompt: str) -> str:
    return f"{role_prompt.rstrip()}\n\n{PROTOCOL}"


def task_prompt(task: Task, task_path: Path, role_prompt: str | None = None) -> str:
    """The turn, in words: the instructions (without the role prompt, which goes in the system
    prompt) and every field of task.json the agent needs."""
    instructions = task.instructions
    if role_prompt and instructions.startswith(role_prompt.rstrip()):
        instructions = instructions[len(role_prompt.rstrip()) :].lstrip()
    where = [f"feature {task.feature}"]
    where += [f"story {task.story}"] if task.story else []
    where += [f"item {task.item}"] if task.item else []
    lines = [
        f"# Consort turn {task.turn}: {task.role}, step {task.step} (attempt {task.attempt})",
        "",
        f"Working on {', '.join(where)}. Task file: {task_path}",
        "",
        "## Instructions",
        "",
        instructions.rstrip(),
        "",
        "## Inputs (read them)",
        "",
        *(_listing(task.inputs) or ["(none)"]),
        "",
        "## Outputs (write each to exactly this path)",
        "",
        *(_listing(task.outputs) or ["(none)"]),
        "",
        "## Writable paths (globs, relative to the working tree)",
        "",
        *([f"- `{glob}`" for glob in task.writable] or ["(none: change no file of the tree)"]),
        "",
        "## Protected paths (never change them)",
        "",
        *[f"- `{glob}`" for glob in (*task.protected, STATE_GLOB)],
    ]
    if task.feedback:
        lines += ["", "## What went wrong in the previous attempt", "", task.feedback.rstrip()]
    return "\n".join(lines) + "\n"


def _listing(paths: Mapping[str, Path]) -> list[str]:
    return [f"- {name}: {path}" for name, path in sorted(paths.items())]


def prompt_argument(prompt: str, turn_dir: TurnDir) -> str:
    """The prompt itself, or — when too long for one command-line argument — a pointer to the
    file in the turn folder that holds it."""
    if len(prompt.encode("utf-8")) <= MAX_PROMPT_ARGUMENT_BYTES:
        return prompt
    path = turn_dir.path / PROMPT_FILE
    atomic_write_text(path, prompt)
    return f"Your task for this turn is in the file {path}. Read all of it first, then do it."


def role_prompt_for(task: Task, project_root: Path | None) -> str:
    """The project's prompt for the task's role (`.consort/roles/<role>.md`), else Consort's."""
    from consort.core.errors import UsageError
    from consort.core.project import Project
    from consort.roles import packaged_prompt, prompt_for

    if project_root is None:
        return packaged_prompt(task.role)
    try:
        return prompt_for(task.role, Project(project_root))
    except UsageError:
        return packaged_prompt(task.role)


def joined_flags(options: Sequence[tuple[str, str | None]]) -> list[str]:
    """["--model", "x", ...] for the options whose value is set."""
    flags: list[str] = []
    for name, value in options:
        if value:
            flags += [name, value]
    return flags
