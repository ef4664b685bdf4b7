"""consort.toml settings of the claude and codex adapters."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from consort.adapters.agents.claude import ClaudeAdapter
from consort.adapters.agents.codex import CodexAdapter
from consort.adapters.agents.command import Limits
from consort.adapters.agents.config import adapter_for, agent_settings
from consort.adapters.agents.headless import RetryPolicy
from consort.core.errors import UsageError
from consort.core.project import Project
from consort.core.vocabulary import Role


def project_with(tmp_path: Path, agents_toml: str) -> Project:
    (tmp_path / ".consort").mkdir(exist_ok=True)
    (tmp_path / "consort.toml").write_text(agents_toml)
    return Project(tmp_path)


def test_model_effort_and_retries_per_role(tmp_path: Path) -> None:
    project = project_with(
        tmp_path,
        """
[agents]
default = "claude"
model = "claude-sonnet-4-5"
inactivity_timeout = 300
retries = 1

[agents.driver]
model = "claude-opus-4-1"
effort = "high"
retry_backoff = 2.5

[agents.navigator]
adapter = "codex"
effort = "medium"
command = ["/opt/codex/bin/codex"]
""",
    )
    driver = adapter_for(project, Role.DRIVER)
    assert driver == ClaudeAdapter(
        command=("claude",),
        model="claude-opus-4-1",
        effort="high",
        limits=Limits(inactivity_s=300, wall_clock_s=4 * 3600.0),
        retry=RetryPolicy(retries=1, backoff_s=2.5),
        project_root=tmp_path,
        guard_command=(sys.executable, "-m", "consort", "guard"),
        sandbox=driver.sandbox,
    )
    assert driver.sandbox is not None and driver.sandbox.state == (
        Path.home() / ".claude",
        Path.home() / ".claude.json",
    )
    architect = adapter_for(project, Role.ARCHITECT)
    assert isinstance(architect, ClaudeAdapter)
    assert (architect.model, architect.effort) == ("claude-sonnet-4-5", None)
    assert architect.retry == RetryPolicy(retries=1, backoff_s=15.0)
    navigator = adapter_for(project, Role.NAVIGATOR)
    assert isinstance(navigator, CodexAdapter)
    assert navigator.command == ("/opt/codex/bin/codex",)
    assert (navigator.model, navigator.effort) == ("claude-sonnet-4-5", "medium")
    settings = agent_settings(project, Role.NAVIGATOR)
    assert settings.root == tmp_path


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[agents]\ndefault = "claude"\nretries = -1\n', "retries"),
        ('[agents]\ndefault = "claude"\nretries = 11\n', "retries"),
        ('[agents]\ndefault = "codex"\nretry_backoff = 0\n', "retry_backoff"),
        ('[agents]\ndefault = "claude"\nmodel = ""\n', "model"),
        ('[agents.driver]\nadapter = "claude"\nefort = "high"\n', "efort"),
    ],
)
def test_bad_settings_are_usage_errors(tmp_path: Path, toml: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        adapter_for(project_with(tmp_path, toml), Role.DRIVER)


def test_the_clis_own_folders_are_inherited_and_env_constants_reach_the_adapters(
    tmp_path: Path,
) -> None:
    project = project_with(
        tmp_path,
        """
[agents]
default = "claude"
env = { HTTPS_PROXY = "http://127.0.0.1:3128", ANTHROPIC_BASE_URL = "http://a" }

[agents.driver]
adapter = "codex"
env = { ANTHROPIC_BASE_URL = "http://b" }
""",
    )
    claude_settings = agent_settings(project, Role.NAVIGATOR)
    codex_settings = agent_settings(project, Role.DRIVER)
    assert "CLAUDE_CONFIG_DIR" in claude_settings.env_allow
    assert "CODEX_HOME" not in claude_settings.env_allow
    assert "CODEX_HOME" in codex_settings.env_allow
    assert dict(codex_settings.env) == {
        "HTTPS_PROXY": "http://127.0.0.1:3128",
        "ANTHROPIC_BASE_URL": "http://b",
    }
    claude = adapter_for(project, Role.NAVIGATOR)
    codex = adapter_for(project, Role.DRIVER)
    assert isinstance(claude, ClaudeAdapter) and claude.env["ANTHROPIC_BASE_URL"] == "http://a"
    assert isinstance(codex, CodexAdapter) and codex.env["ANTHROPIC_BASE_URL"] == "http://b"


@pytest.mark.parametrize("name", ["DATABASE_URL", "PGPASSWORD", "CONSORT_TASK"])
def test_env_constants_cannot_set_the_protocols_or_the_databases_variables(
    tmp_path: Path, name: str
) -> None:
    project = project_with(tmp_path, f'[agents]\ndefault = "claude"\nenv = {{ {name} = "x" }}\n')
    with pytest.raises(UsageError, match=name):
        agent_settings(project, Role.DRIVER)
