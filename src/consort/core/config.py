"""The typed model of `consort.toml`, and the text `consort init` writes."""

from __future__ import annotations

import tomllib
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from consort.core.config_problems import invalid
from consort.core.errors import UsageError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DbBackendKind(StrEnum):
    EMBEDDED = "embedded"
    POSTGRES = "postgres"


class GateMode(StrEnum):
    INTERACTIVE = "interactive"
    PROXY = "proxy"


class SandboxMode(StrEnum):
    """`[agents] sandbox`: whether agent turns run in an operating-system sandbox."""

    AUTO = "auto"  # always, where one can be made; elsewhere only the replay adapter runs
    ON = "on"  # always; where none can be made, no turn runs (not even a replay)
    OFF = "off"  # never: a person's explicit choice, and every such turn is recorded


class TestSection(_Section):
    command: list[str] = Field(default_factory=lambda: ["python", "-m", "pytest"], min_length=1)
    # Seconds the test process may run before it is stopped (and the run fails).
    timeout: float = Field(default=900.0, gt=0)
    # Folders that are not in git but the suite needs (a virtual environment, node_modules),
    # relative to the project root: linked into every run's export.
    dependencies: list[str] = Field(default_factory=list)


class SealSection(_Section):
    # Capabilities production code may use although they can reach into the test machinery
    # (see consort.adapters.smells.tamper): "process", or "process:src/worker.py" for one file.
    allow: list[str] = Field(default_factory=list)


class MigrateSection(_Section):
    command: list[str] = Field(default_factory=lambda: ["alembic", "upgrade", "head"])


class DbSection(_Section):
    backend: DbBackendKind = DbBackendKind.EMBEDDED
    # For backend = "postgres": the server URL, given directly or (better, keeps the password
    # out of the repository) through the name of an environment variable holding it.
    url: str | None = None
    url_env: str | None = None

    @model_validator(mode="after")
    def _server_needs_url(self) -> DbSection:
        if self.backend is DbBackendKind.POSTGRES and not (self.url or self.url_env):
            raise ValueError('backend = "postgres" needs url = "postgresql://..." or url_env')
        return self


class GatesSection(_Section):
    mode: GateMode = GateMode.INTERACTIVE


class BuildSection(_Section):
    repair_attempts: int = Field(default=3, ge=0, le=20)
    protected: list[str] = Field(
        default_factory=lambda: [
            "tests/**",
            "**/conftest.py",
            "pytest.ini",
            "setup.cfg",
            "tox.ini",
        ]
    )


class DeploySection(_Section):
    # How to start the app for the smoke test; "{port}" becomes a free port on 127.0.0.1.
    command: list[str] = Field(default_factory=list)
    smoke: list[str] = Field(default_factory=lambda: ["/health"])
    startup_timeout: float = Field(default=30.0, gt=0)


class TurnsSection(_Section):
    # Failed attempts allowed after the first, per step, before the step escalates to a person.
    retries: int = Field(default=2, ge=0, le=20)


class Config(BaseModel):
    """consort.toml. Unknown keys are errors, so a typo never silently falls back to a default."""

    model_config = ConfigDict(extra="forbid")

    test: TestSection = Field(default_factory=TestSection)
    migrate: MigrateSection = Field(default_factory=MigrateSection)
    db: DbSection = Field(default_factory=DbSection)
    gates: GatesSection = Field(default_factory=GatesSection)
    build: BuildSection = Field(default_factory=BuildSection)
    turns: TurnsSection = Field(default_factory=TurnsSection)
    deploy: DeploySection = Field(default_factory=DeploySection)
    seal: SealSection = Field(default_factory=SealSection)
    # Agent settings are owned by the agents package; kept loose here so that adapters can add
    # their own keys without this module knowing them.
    agents: dict[str, object] = Field(default_factory=dict)


def load_config(path: Path) -> Config:
    """Read and validate consort.toml, turning every problem into one message naming the rule."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"{path} not found", fix="run `consort init`") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}") from exc
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        raise invalid(str(path), exc, Config) from exc


DEFAULT_CONFIG_TEXT = """\
# Consort project configuration. See `consort --help`.

[test]
command = ["python", "-m", "pytest"]     # Consort adds its own JUnit XML report option

[migrate]
command = ["alembic", "upgrade", "head"]

[db]
backend = "embedded"                      # or "postgres" with url_env = "NAME" (or url = "...")

[gates]
mode = "interactive"                      # or "proxy": approvals by policy, recorded as such

[build]
repair_attempts = 3
protected = ["tests/**", "**/conftest.py", "pytest.ini", "setup.cfg", "tox.ini"]

[turns]
retries = 2                               # failed attempts per step before a person is asked

[agents]
sandbox = "auto"                          # every agent turn in a bubblewrap sandbox ("off": none)
# Which agent plays each role: claude | codex | command | replay.
#   default = "command"
#   command = ["python3", "my_agent.py"]   # speaks the protocol: reads $CONSORT_TASK
# or per role:
#   [agents.driver]
#   adapter = "replay"
#   dir = "recordings"
"""
