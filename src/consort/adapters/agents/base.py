"""The one protocol every agent adapter implements, and the environment an agent runs in."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from consort.adapters.agents.task import AgentReport, Task, TurnDir
from consort.core.errors import UsageError
from consort.core.vocabulary import Role, SandboxUse, Step

# Taken from Consort's own environment when set; nothing else is inherited.
BASE_VARIABLES = ("PATH", "HOME", "LANG", "TERM", "TMPDIR")
_FALLBACKS = {"PATH": os.defpath, "LANG": "C.UTF-8", "TERM": "dumb"}


class KillReason(StrEnum):
    INACTIVITY = "inactivity"  # no output and no file change for too long
    WALL_CLOCK = "wall-clock"  # ran past the hard cap


@dataclass(frozen=True)
class TurnOutcome:
    """How the agent process ended, as observed by Consort."""

    exit_code: int  # negative: killed by that signal
    duration_s: float
    stdout_path: Path
    stderr_path: Path
    killed: KillReason | None = None
    error: str | None = None  # why the agent could not run at all (no program, no recording)
    agent: AgentReport | None = None  # which agent it was; the calls the guard refused
    sandbox: SandboxUse = SandboxUse.OFF  # how it ran: what the ledger records of the turn
    # processes it started that still ran after it ended (ended by Consort then)
    left_running: int = 0

    @property
    def timed_out(self) -> bool:
        return self.killed is not None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.killed is None and self.error is None


class Adapter(Protocol):
    """Runs one turn: the agent reads `task`, works in `workdir`, and its output lands in
    `turn_dir`. A failed attempt is a TurnOutcome, never an exception; exceptions are for
    Consort's own problems."""

    def run(
        self, task: Task, turn_dir: TurnDir, workdir: Path, env: Mapping[str, str]
    ) -> TurnOutcome: ...


def check_env_allow(names: Iterable[str]) -> tuple[str, ...]:
    """Validate an allow-list of extra variables an agent may inherit.

    Database variables and Consort's own are refused: the agent's only database is the branch
    database Consort gives it, and the protocol variables are Consort's to set.
    """
    allowed = []
    for name in names:
        if not name or "=" in name or "\0" in name:
            raise UsageError(f"env_allow: {name!r} is not an environment variable name")
        if name == "DATABASE_URL" or name.startswith(("CONSORT_", "PG")):
            raise UsageError(
                f"env_allow: {name} cannot be passed to agents",
                fix="agents get only their branch's DATABASE_URL, set by Consort",
            )
        allowed.append(name)
    return tuple(allowed)


def check_env_constants(constants: Mapping[str, str]) -> dict[str, str]:
    """Validate the `env` table of constants every turn of an agent gets (a base URL, a proxy):
    the same names are refused as in `env_allow`."""
    check_env_allow(constants)
    for name, value in constants.items():
        if not isinstance(value, str) or "\0" in value:
            raise UsageError(f"env: the value of {name} must be a string")
    return dict(constants)


def with_constants(env: Mapping[str, str], constants: Mapping[str, str]) -> dict[str, str]:
    """A turn's environment with the agent's constants added; the protocol's own variables
    (which `check_env_constants` keeps out of the constants) stay as Consort set them."""
    return {**env, **constants}


def build_agent_env(
    task_path: Path,
    role: Role,
    step: Step,
    database_url: str | None = None,
    *,
    allow: Iterable[str] = (),
    parent: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of an agent process, built from nothing.

    Only PATH, HOME, LANG, TERM and TMPDIR (plus the names in `allow`) come from `parent`
    (default: Consort's own environment), so no secret and no DATABASE_URL of Consort's leaks
    into a turn. DATABASE_URL is set only when given: build turns get their branch database.
    """
    source = os.environ if parent is None else parent
    env = {name: source[name] for name in BASE_VARIABLES if name in source}
    for name, fallback in _FALLBACKS.items():
        env.setdefault(name, fallback)
    for name in check_env_allow(allow):
        if name in source:
            env[name] = source[name]
    env["CONSORT_TASK"] = str(Path(task_path).absolute())
    env["CONSORT_ROLE"] = str(role)
    env["CONSORT_STEP"] = str(step)
    if database_url is not None:
        env["DATABASE_URL"] = database_url
    return env
