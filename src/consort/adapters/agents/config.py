"""Which adapter each role uses, read from the `[agents]` table of consort.toml.

```toml
[agents]
default = "command"            # adapter of every role without a table of its own (or without
                               # `adapter` in it)
command = ["python3", "agent.py"]   # settings here apply to every role ...
inactivity_timeout = 600       # seconds without output or file change before a turn is killed
wall_clock_timeout = 14400     # hard cap on a turn, in seconds
env_allow = ["HTTPS_PROXY"]    # extra variables agents may inherit from Consort's environment
env = { HTTPS_PROXY = "http://127.0.0.1:3128" }   # constants set in every turn's environment
sandbox = "auto"               # auto | on | off: every agent turn in a bubblewrap sandbox
read_only = ["~/.rustup"]      # more folders turns may read (toolchains, dependency folders)

[agents.driver]                # ... and a role's own table overrides them
adapter = "replay"             # command | replay | claude | codex
dir = "recordings"             # replay: the recording folder, relative to the project root

[agents.navigator]
adapter = "claude"             # Claude Code (`claude`); "codex": the Codex CLI (`codex`)
model = "claude-sonnet-4-5"    # claude/codex: --model (default: the CLI's own)
effort = "high"                # claude: --effort; codex: model_reasoning_effort
retries = 2                    # claude/codex: further attempts after a transient API error
retry_backoff = 15             # seconds before the first retry, doubled for each next one
command = ["claude"]           # claude/codex: the program to run, if not the one on PATH
env = { ANTHROPIC_BASE_URL = "https://gateway.example" }   # merged over [agents] env
state = ["~/.claude"]          # the tool's own folders, writable in its sandbox (default: claude
                               # $CLAUDE_CONFIG_DIR or ~/.claude and ~/.claude.json, codex
                               # $CODEX_HOME or ~/.codex, others none)
```

The claude adapter's turns also inherit CLAUDE_CONFIG_DIR, the codex adapter's CODEX_HOME, when
Consort's environment sets them: they say where the CLI keeps its login, and are no secret.
Neither `env_allow` nor `env` may name DATABASE_URL, a PG* variable or a CONSORT_* one.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from consort.adapters.agents.base import Adapter, check_env_allow, check_env_constants
from consort.adapters.agents.command import (
    DEFAULT_INACTIVITY_TIMEOUT_S,
    DEFAULT_WALL_CLOCK_TIMEOUT_S,
    CommandAdapter,
    Limits,
)
from consort.adapters.agents.headless import (
    DEFAULT_RETRIES,
    DEFAULT_RETRY_BACKOFF_S,
    RetryPolicy,
    find_program,
)
from consort.adapters.agents.replay import ReplayAdapter
from consort.adapters.db.account import consort_private_folders
from consort.adapters.sandbox.policy import SandboxPolicy, decide
from consort.core.config import SandboxMode
from consort.core.config_problems import invalid
from consort.core.errors import UsageError
from consort.core.project import CONFIG_FILE, Project
from consort.core.vocabulary import Role, SandboxUse

_Model = TypeVar("_Model", bound=BaseModel)


class AdapterKind(StrEnum):
    COMMAND = "command"
    REPLAY = "replay"
    CLAUDE = "claude"
    CODEX = "codex"


ENV_TABLE = "env"  # [agents] env = {...}: constants, not a role's table

# Where each CLI keeps its configuration and login: locations, not secrets, inherited by turns.
LOCATION_VARIABLES: Mapping[AdapterKind, tuple[str, ...]] = {
    AdapterKind.CLAUDE: ("CLAUDE_CONFIG_DIR",),
    AdapterKind.CODEX: ("CODEX_HOME",),
}

# The agent tools' own state, writable in their sandbox unless `state` says otherwise.
DEFAULT_STATE: dict[AdapterKind, tuple[str, ...]] = {
    AdapterKind.CLAUDE: ("~/.claude", "~/.claude.json"),
    AdapterKind.CODEX: ("~/.codex",),
}


class _Settings(BaseModel):
    """Keys allowed both in [agents] (for every role) and in [agents.<role>]."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: list[str] | None = Field(default=None, min_length=1)
    dir: str | None = Field(default=None, min_length=1)
    inactivity_timeout: float | None = Field(default=None, gt=0)
    wall_clock_timeout: float | None = Field(default=None, gt=0)
    env_allow: list[str] | None = None
    env: dict[str, str] | None = None
    model: str | None = Field(default=None, min_length=1)
    effort: str | None = Field(default=None, min_length=1)
    retries: int | None = Field(default=None, ge=0, le=10)
    retry_backoff: float | None = Field(default=None, gt=0)
    state: list[str] | None = None
    read_only: list[str] | None = None


class _SharedTable(_Settings):
    default: str | None = None
    sandbox: SandboxMode = SandboxMode.AUTO


class _RoleTable(_Settings):
    adapter: str | None = None


@dataclass(frozen=True)
class AgentSettings:
    """One role's resolved agent settings."""

    role: Role
    adapter: AdapterKind
    command: tuple[str, ...] | None
    replay_dir: Path | None  # absolute
    inactivity_timeout_s: float
    wall_clock_timeout_s: float
    env_allow: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # constants for every turn
    model: str | None = None  # claude, codex
    effort: str | None = None  # claude, codex
    retries: int = DEFAULT_RETRIES  # claude, codex: after transient API errors
    retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S
    root: Path | None = None  # the project root: where the role prompts live
    sandbox: SandboxMode = SandboxMode.AUTO
    state: tuple[Path, ...] = ()  # the tool's own folders, writable in the sandbox
    read_only: tuple[Path, ...] = ()  # more folders its turns may read
    # `[env] file`: where Consort keeps the checked-out branch's login, hidden like a `.env`
    env_file: str = ".env"

    @property
    def table(self) -> str:
        return f"[agents.{self.role}]"

    @property
    def runs_process(self) -> bool:
        """Replay writes the recorded files itself; every other adapter runs an agent program."""
        return self.adapter is not AdapterKind.REPLAY


@dataclass(frozen=True)
class AgentsConfig:
    shared: _SharedTable
    roles: Mapping[Role, _RoleTable]

    def settings(self, role: Role, root: Path, *, env_file: str = ".env") -> AgentSettings:
        own = self.roles.get(role, _RoleTable())
        shared = self.shared
        adapter_name = own.adapter or shared.default
        if adapter_name is None:
            raise UsageError(
                f"no agent adapter configured for the {role} role in {CONFIG_FILE}",
                fix=f'set [agents] default = "command" (or add adapter = "..." to [agents.{role}])',
            )
        where = f"[agents.{role}] adapter" if own.adapter else "[agents] default"
        directory = own.dir if own.dir is not None else shared.dir
        kind = _adapter_kind(adapter_name, where)
        allow = [
            *LOCATION_VARIABLES.get(kind, ()),
            *(shared.env_allow or ()),
            *(own.env_allow or ()),
        ]
        return AgentSettings(
            role=role,
            adapter=kind,
            command=tuple(c) if (c := own.command or shared.command) else None,
            replay_dir=None if directory is None else (root / directory).resolve(),
            inactivity_timeout_s=_first(
                own.inactivity_timeout, shared.inactivity_timeout, DEFAULT_INACTIVITY_TIMEOUT_S
            ),
            wall_clock_timeout_s=_first(
                own.wall_clock_timeout, shared.wall_clock_timeout, DEFAULT_WALL_CLOCK_TIMEOUT_S
            ),
            env_allow=check_env_allow(dict.fromkeys(allow)),
            env=check_env_constants({**(shared.env or {}), **(own.env or {})}),
            model=own.model or shared.model,
            effort=own.effort or shared.effort,
            retries=next(
                n for n in (own.retries, shared.retries, DEFAULT_RETRIES) if n is not None
            ),
            retry_backoff_s=_first(
                own.retry_backoff, shared.retry_backoff, DEFAULT_RETRY_BACKOFF_S
            ),
            root=root,
            env_file=env_file,
            sandbox=shared.sandbox,
            state=_paths(
                own.state if own.state is not None else shared.state,
                _default_state(kind),
                root,
                f"[agents.{role}] state" if own.state is not None else "[agents] state",
                relative=False,
            ),
            read_only=_paths(
                [*(shared.read_only or ()), *(own.read_only or ())],
                (),
                root,
                "read_only",
                relative=True,
            ),
        )


def _default_state(kind: AdapterKind) -> tuple[str, ...]:
    """The CLI's own folders: where its location variable points when Consort's environment
    sets it (the turn inherits that variable too), else its usual place in the home folder."""
    for name in LOCATION_VARIABLES.get(kind, ()):
        if os.environ.get(name):
            return (os.environ[name],)
    return DEFAULT_STATE.get(kind, ())


def parse_agents(raw: Mapping[str, object]) -> AgentsConfig:
    """Validate the [agents] table; every problem becomes one message naming the key."""
    shared_raw: dict[str, object] = {}
    roles: dict[Role, _RoleTable] = {}
    role_names = {str(role) for role in Role}
    for key, value in raw.items():
        if isinstance(value, Mapping) and key != ENV_TABLE:
            if key not in role_names:
                nearest = difflib.get_close_matches(key, sorted(role_names), n=1, cutoff=0.6)
                raise UsageError(
                    f"{CONFIG_FILE}: [agents.{key}] names no role"
                    + (f", did you mean [agents.{nearest[0]}]?" if nearest else ""),
                    fix=(f"rename it [agents.{nearest[0]}]; " if nearest else "")
                    + f"roles are {', '.join(sorted(role_names))}",
                )
            table = _validate(_RoleTable, value, f"[agents.{key}]")
            if table.adapter is not None:
                _adapter_kind(table.adapter, f"[agents.{key}] adapter")
            roles[Role(key)] = table
        else:
            shared_raw[key] = value
    shared = _validate(_SharedTable, shared_raw, "[agents]")
    if shared.default is not None:
        _adapter_kind(shared.default, "[agents] default")
    for allow in (shared.env_allow, *(table.env_allow for table in roles.values())):
        check_env_allow(allow or ())
    for constants in (shared.env, *(table.env for table in roles.values())):
        check_env_constants(constants or {})
    return AgentsConfig(shared, roles)


def agent_settings(project: Project, role: Role) -> AgentSettings:
    return parse_agents(project.config.agents).settings(
        role, project.root, env_file=project.env_file_name
    )


def adapter_for(project: Project, role: Role) -> Adapter:
    """The adapter configured for `role`, ready to run; a clear UsageError when it cannot be."""
    return make_adapter(agent_settings(project, role))


def sandbox_policy(settings: AgentSettings) -> SandboxPolicy:
    """How the role's turns are sandboxed; a UsageError where they must be and cannot be."""
    who = f"the {settings.role} role's {settings.adapter} adapter"
    use, found = decide(settings.sandbox, settings.runs_process, who=who)
    return SandboxPolicy(
        use=use,
        bwrap=found.bwrap if found is not None else None,
        project_root=settings.root or Path.cwd(),
        state=settings.state,
        read_only=settings.read_only,
        hidden=consort_private_folders(),
        env_file=settings.env_file,
    )


def sandbox_use(settings: AgentSettings) -> SandboxUse:
    """How the role's next turn will run, for the ledger's record of the turn's start."""
    return sandbox_policy(settings).use


def make_adapter(settings: AgentSettings) -> Adapter:
    sandbox = sandbox_policy(settings)
    if settings.adapter in (AdapterKind.CLAUDE, AdapterKind.CODEX):
        return _headless_adapter(settings, sandbox)
    if settings.adapter is AdapterKind.COMMAND:
        if settings.command is None:
            raise UsageError(
                f"the {settings.role} role uses the command adapter but no command is set",
                fix=f'add command = ["program", "arg"] to {settings.table} or [agents]',
            )
        _require_program(settings, settings.command[0])
        limits = Limits(
            inactivity_s=settings.inactivity_timeout_s,
            wall_clock_s=settings.wall_clock_timeout_s,
        )
        return CommandAdapter(settings.command, limits, dict(settings.env), sandbox)
    # AdapterKind.REPLAY
    if settings.replay_dir is None:
        raise UsageError(
            f"the {settings.role} role uses the replay adapter but no recording folder is set",
            fix=f'add dir = "path/to/recording" to {settings.table} or [agents]',
        )
    if not settings.replay_dir.is_dir():
        raise UsageError(
            f"replay folder {settings.replay_dir} (for the {settings.role} role) does not exist"
        )
    return ReplayAdapter(settings.replay_dir)


def _require_program(settings: AgentSettings, program: str) -> None:
    """A configured agent program that cannot be run is the configuration's error, found before
    any turn begins: running it would only fail every attempt until the step escalates. A
    relative path is the project's own script (every worktree of the project has it too)."""
    if os.sep in program and not os.path.isabs(program) and settings.root is not None:
        resolved = find_program(str(settings.root / program))
    else:
        resolved = find_program(program)
    if resolved is None:
        where = "on PATH" if os.sep not in program else "or not executable"
        raise UsageError(
            f"the {settings.role} role's agent program {program!r} is not found {where}"
            f" ({CONFIG_FILE} {settings.table}, or [agents])",
            fix=f"install it, or set command in {settings.table} or [agents] to a program that "
            "exists (a relative path is from the project root)",
        )


def _headless_adapter(settings: AgentSettings, sandbox: SandboxPolicy) -> Adapter:
    """Claude Code or Codex; `command` (if set) is the program to run instead of the default."""
    from consort.adapters.agents import claude, codex

    limits = Limits(
        inactivity_s=settings.inactivity_timeout_s, wall_clock_s=settings.wall_clock_timeout_s
    )
    retry = RetryPolicy(retries=settings.retries, backoff_s=settings.retry_backoff_s)
    if settings.adapter is AdapterKind.CLAUDE:
        return claude.ClaudeAdapter(
            command=settings.command or (claude.PROGRAM,),
            model=settings.model,
            effort=settings.effort,
            limits=limits,
            retry=retry,
            project_root=settings.root,
            env=dict(settings.env),
            sandbox=sandbox,
        )
    return codex.CodexAdapter(
        command=settings.command or (codex.PROGRAM,),
        model=settings.model,
        effort=settings.effort,
        limits=limits,
        retry=retry,
        project_root=settings.root,
        env=dict(settings.env),
        sandbox=sandbox,
    )


def _paths(
    given: list[str] | None,
    default: tuple[str, ...],
    root: Path,
    where: str,
    *,
    relative: bool,
) -> tuple[Path, ...]:
    """Configured paths, absolute: `~` is the user's home; relative ones (where allowed) are
    relative to the project root."""
    found = []
    for text in default if given is None else given:
        path = Path(os.path.expanduser(text))
        if not path.is_absolute():
            if not relative:
                raise UsageError(
                    f"{CONFIG_FILE}: {where}: {text!r} must be absolute or start with ~",
                    fix="the tool's state folders live outside the project",
                )
            path = root / path
        found.append(Path(os.path.normpath(path)))
    return tuple(found)


def _adapter_kind(name: str, where: str) -> AdapterKind:
    try:
        return AdapterKind(name)
    except ValueError:
        choices = ", ".join(kind.value for kind in AdapterKind)
        raise UsageError(
            f"{CONFIG_FILE}: unknown agent adapter {name!r} in {where}",
            fix=f"choose one of {choices}",
        ) from None


def _validate(model: type[_Model], raw: Mapping[str, object], table: str) -> _Model:
    try:
        return model.model_validate(dict(raw))
    except ValidationError as exc:
        raise invalid(f"{CONFIG_FILE} {table}", exc, model, prefix=table.strip("[]")) from exc


def _first(*values: float | None) -> float:
    return next(value for value in values if value is not None)


def turn_env_preview(kind: AdapterKind, project: Project | None) -> dict[str, str]:
    """The environment a turn of `kind` would get (less the task's own variables), for
    `consort doctor`: from the project's settings of the first role using that adapter, else
    from the defaults."""
    from consort.adapters.agents.base import build_agent_env, with_constants
    from consort.core.vocabulary import Step

    allow: tuple[str, ...] = LOCATION_VARIABLES.get(kind, ())
    constants: Mapping[str, str] = {}
    if project is not None:
        config = parse_agents(project.config.agents)
        for role in Role:
            try:
                settings = config.settings(role, project.root)
            except UsageError:
                continue
            if settings.adapter is kind:
                allow, constants = settings.env_allow, settings.env
                break
    env = build_agent_env(Path(os.devnull), Role.DRIVER, Step.GREEN, allow=allow)
    return with_constants(env, constants)
