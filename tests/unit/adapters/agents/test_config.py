"""Per-role adapter choice from consort.toml's [agents] table."""

from __future__ import annotations

from pathlib import Path

import pytest

from consort.adapters.agents.command import DEFAULT_INACTIVITY_TIMEOUT_S, CommandAdapter, Limits
from consort.adapters.agents.config import AdapterKind, adapter_for, agent_settings
from consort.adapters.agents.replay import ReplayAdapter
from consort.core.config import DEFAULT_CONFIG_TEXT
from consort.core.errors import ExitCode, UsageError
from consort.core.project import Project
from consort.core.vocabulary import Role


def project_with(tmp_path: Path, agents_toml: str) -> Project:
    (tmp_path / ".consort").mkdir(exist_ok=True)
    (tmp_path / "consort.toml").write_text(agents_toml)
    return Project(tmp_path)


def test_shared_settings_apply_to_every_role_and_role_tables_override(tmp_path: Path) -> None:
    (tmp_path / "recordings").mkdir()
    project = project_with(
        tmp_path,
        """
[agents]
default = "command"
command = ["python3", "agent.py"]
inactivity_timeout = 30
env_allow = ["HTTPS_PROXY"]

[agents.driver]
adapter = "replay"
dir = "recordings"

[agents.navigator]
command = ["python3", "navigator.py", "--fast"]
inactivity_timeout = 5
wall_clock_timeout = 60
env_allow = ["NO_PROXY"]
""",
    )
    architect = adapter_for(project, Role.ARCHITECT)
    assert isinstance(architect, CommandAdapter)
    assert (architect.argv, architect.limits) == (
        ("python3", "agent.py"),
        Limits(inactivity_s=30, wall_clock_s=4 * 3600.0),
    )
    navigator = adapter_for(project, Role.NAVIGATOR)
    assert isinstance(navigator, CommandAdapter)
    assert (navigator.argv, navigator.limits) == (
        ("python3", "navigator.py", "--fast"),
        Limits(inactivity_s=5, wall_clock_s=60),
    )
    assert agent_settings(project, Role.NAVIGATOR).env_allow == ("HTTPS_PROXY", "NO_PROXY")
    driver = adapter_for(project, Role.DRIVER)
    assert driver == ReplayAdapter((tmp_path / "recordings").resolve())


def test_defaults_without_timeouts(tmp_path: Path) -> None:
    project = project_with(tmp_path, '[agents]\ndefault = "command"\ncommand = ["agent"]\n')
    settings = agent_settings(project, Role.DBA)
    assert settings.adapter is AdapterKind.COMMAND
    assert settings.inactivity_timeout_s == DEFAULT_INACTIVITY_TIMEOUT_S == 600
    assert settings.env_allow == ()


@pytest.mark.parametrize(
    ("toml", "role", "message"),
    [
        (
            '[agents]\ndefault = "gpt"\n',
            Role.DRIVER,
            "unknown agent adapter 'gpt' in \\[agents\\] default",
        ),
        (
            '[agents]\ndefault = "command"\n[agents.driver]\nadapter = "robot"\n',
            Role.DBA,
            "unknown agent adapter 'robot' in \\[agents.driver\\] adapter",
        ),
        ('[agents]\ndefault = "command"\n', Role.DRIVER, "command adapter but no command"),
        ('[agents]\ndefault = "replay"\n', Role.SPEC_AUTHOR, "no recording folder"),
        ('[agents]\ndefault = "replay"\ndir = "nowhere"\n', Role.SPEC_AUTHOR, "does not exist"),
        ("[agents]\n", Role.DRIVER, "no agent adapter configured for the driver role"),
        ('[agents.drivr]\nadapter = "command"\n', Role.DRIVER, "\\[agents.drivr\\] names no role"),
        (
            '[agents.driver]\nadapter = "command"\ncomand = ["x"]\n',
            Role.DRIVER,
            "\\[agents.driver\\] is invalid: comand",
        ),
        ('[agents]\ndefault = "command"\ncommand = []\n', Role.DRIVER, "\\[agents\\] is invalid"),
        (
            '[agents]\ndefault = "command"\ncommand = ["a"]\ninactivity_timeout = 0\n',
            Role.DRIVER,
            "inactivity_timeout",
        ),
        (
            '[agents]\ndefault = "command"\ncommand = ["a"]\nenv_allow = ["DATABASE_URL"]\n',
            Role.DRIVER,
            "DATABASE_URL cannot be passed",
        ),
    ],
)
def test_configuration_problems_are_usage_errors(
    tmp_path: Path, toml: str, role: Role, message: str
) -> None:
    project = project_with(tmp_path, toml)
    with pytest.raises(UsageError, match=message):
        adapter_for(project, role)


def test_the_config_init_writes_asks_for_an_adapter(tmp_path: Path) -> None:
    project = project_with(tmp_path, DEFAULT_CONFIG_TEXT)
    with pytest.raises(UsageError) as caught:
        adapter_for(project, Role.SPEC_AUTHOR)
    assert "no agent adapter configured for the spec-author role" in caught.value.message
    assert caught.value.fix is not None


@pytest.mark.parametrize(
    ("toml", "message", "fix"),
    [
        (
            '[agents.driver]\nadapter = "command"\ncomand = ["x"]\n',
            "[agents.driver] is invalid: comand: unknown key, did you mean command?",
            "in [agents.driver], rename comand to command (or remove it)",
        ),
        (
            '[agents]\ndefualt = "command"\n',
            "[agents] is invalid: defualt: unknown key, did you mean default?",
            "in [agents], rename defualt to default (or remove it)",
        ),
        (
            '[agents.drivr]\nadapter = "command"\n',
            "[agents.drivr] names no role, did you mean [agents.driver]?",
            "rename it [agents.driver]; roles are",
        ),
    ],
)
def test_a_misspelt_agents_key_is_named_with_the_nearest_valid_one(
    tmp_path: Path, toml: str, message: str, fix: str
) -> None:
    project = project_with(tmp_path, toml)
    with pytest.raises(UsageError) as caught:
        adapter_for(project, Role.DRIVER)
    assert message in caught.value.message
    assert caught.value.fix is not None and caught.value.fix.startswith(fix)


@pytest.mark.parametrize(
    "program", ["no-such-agent-program-3f9a", "./agents/missing.py", "/nowhere/bin/agent"]
)
def test_a_configured_agent_program_that_does_not_exist_is_a_configuration_error(
    tmp_path: Path, program: str
) -> None:
    project = project_with(
        tmp_path, f'[agents]\ndefault = "command"\ncommand = ["{program}", "--fast"]\n'
    )
    with pytest.raises(UsageError) as caught:
        adapter_for(project, Role.DRIVER)
    assert caught.value.code is ExitCode.USAGE
    assert f"agent program {program!r} is not found" in caught.value.message
    assert caught.value.fix is not None and "command" in caught.value.fix


def test_a_project_script_is_found_from_the_project_root_and_must_be_executable(
    tmp_path: Path,
) -> None:
    script = tmp_path / "agents" / "agent.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\nexit 0\n")
    project = project_with(
        tmp_path, '[agents]\ndefault = "command"\ncommand = ["./agents/agent.sh"]\n'
    )
    with pytest.raises(UsageError, match="not executable"):
        adapter_for(project, Role.DRIVER)
    script.chmod(0o755)
    adapter = adapter_for(project, Role.DRIVER)
    assert isinstance(adapter, CommandAdapter)
    assert adapter.argv == ("./agents/agent.sh",)
