"""The `.claude/` files: role agents and slash commands, refreshed without losing user edits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from consort.adapters.agents.claude_files import FileAction, manifest_path, sync
from consort.app.init import InitReport, step_claude_files
from consort.core.project import Project
from consort.core.vocabulary import Role


@pytest.fixture
def project(tmp_path: Path) -> Project:
    (tmp_path / ".consort" / "roles").mkdir(parents=True)
    (tmp_path / "consort.toml").write_text("")
    return Project(tmp_path)


def actions(report_files: list) -> dict[str, FileAction]:  # type: ignore[type-arg]
    return {f.path: f.action for f in report_files}


def test_first_sync_writes_one_agent_per_role_and_four_commands(project: Project) -> None:
    report = sync(project)

    assert {f.action for f in report.files} == {FileAction.CREATE}
    agents = sorted(p.name for p in (project.root / ".claude" / "agents").iterdir())
    assert agents == sorted(f"{role}.md" for role in Role)
    commands = sorted(p.name for p in (project.root / ".claude" / "commands").iterdir())
    assert commands == ["build.md", "deploy.md", "design.md", "plan.md"]
    manifest = json.loads(manifest_path(project).read_text())
    assert manifest["version"] == 1
    assert set(manifest["files"]) == {f.path for f in report.files}


def test_an_agent_file_has_front_matter_and_the_role_prompt(project: Project) -> None:
    (project.state_dir / "roles" / "driver.md").write_text("# Driver, our way\n\nBe brief.\n")
    sync(project)
    text = (project.root / ".claude" / "agents" / "driver.md").read_text()
    front, _, body = text.removeprefix("---\n").partition("---\n")
    fields = dict(line.split(": ", 1) for line in front.strip().splitlines())
    assert fields["name"] == "driver"
    assert "least code" in fields["description"]
    assert fields["tools"] == "Read, Write, Edit, Bash"
    assert body.strip() == "# Driver, our way\n\nBe brief."
    architect = (project.root / ".claude" / "agents" / "architect.md").read_text()
    assert "tools: Read, Write, Bash\n" in architect  # design roles search through Bash
    assert "# Architect" in architect  # the packaged prompt when the project has none


@pytest.mark.parametrize("lane", ["design", "build", "deploy"])
def test_lane_commands_drive_until_their_lane_then_show_next(project: Project, lane: str) -> None:
    sync(project)
    text = (project.root / ".claude" / "commands" / f"{lane}.md").read_text()
    assert text.startswith("---\ndescription: Consort " + lane)
    assert "allowed-tools: Bash(consort drive:*), Bash(consort next:*)" in text
    drive = text.index(f"`consort drive --until {lane}`")
    assert drive < text.index("`consort next`")
    assert "$ARGUMENTS" in text
    assert "Never approve or reject a gate yourself" in text


def test_the_plan_command_records_the_request_then_shows_next(project: Project) -> None:
    sync(project)
    text = (project.root / ".claude" / "commands" / "plan.md").read_text()
    assert "consort intake feature" in text
    assert text.index("consort intake feature") < text.index("`consort next`")


def test_update_refreshes_consort_files_and_keeps_user_changes(project: Project) -> None:
    sync(project)
    agents = project.root / ".claude" / "agents"
    (agents / "dba.md").write_text("my own DBA agent\n")  # the user's edit
    (project.state_dir / "roles" / "driver.md").write_text("# Driver v2\n")  # a new role prompt
    (project.state_dir / "roles" / "dba.md").write_text("# DBA v2\n")

    dry = sync(project, dry_run=True)
    assert actions(dry.files)[".claude/agents/driver.md"] is FileAction.UPDATE
    assert actions(dry.files)[".claude/agents/dba.md"] is FileAction.KEEP
    assert actions(dry.files)[".claude/agents/navigator.md"] is FileAction.UNCHANGED
    assert "# Driver v2" not in (agents / "driver.md").read_text()  # dry run: nothing written

    report = sync(project)
    assert [f.path for f in report.changed] == [".claude/agents/driver.md"]
    assert [f.path for f in report.kept] == [".claude/agents/dba.md"]
    assert "# Driver v2" in (agents / "driver.md").read_text()
    assert (agents / "dba.md").read_text() == "my own DBA agent\n"

    forced = sync(project, force=True)
    assert actions(forced.files)[".claude/agents/dba.md"] is FileAction.OVERWRITE
    assert "# DBA v2" in (agents / "dba.md").read_text()
    assert sync(project).changed == []  # and now all is Consort's again


def test_a_file_the_user_had_before_is_kept(project: Project) -> None:
    commands = project.root / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "build.md").write_text("our own /build\n")
    report = sync(project)
    assert actions(report.files)[".claude/commands/build.md"] is FileAction.KEEP
    assert (commands / "build.md").read_text() == "our own /build\n"


def test_init_step_reports_what_it_wrote_and_kept(project: Project) -> None:
    (project.root / ".claude" / "agents").mkdir(parents=True)
    (project.root / ".claude" / "agents" / "driver.md").write_text("mine\n")
    report = InitReport(project.root)
    step_claude_files(project, report)
    assert report.done == [
        "wrote 11 Claude Code file(s) in .claude/ (role agents and the /plan, /design, /build, "
        "/deploy commands)"
    ]
    assert "kept your own .claude/agents/driver.md" in report.warnings[0]
    again = InitReport(project.root)
    step_claude_files(project, again)
    assert again.done == []


def test_consort_update_agents_command(project: Project) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "consort", "update-agents", *args],
            cwd=project.root,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
        )

    dry = run("--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would create .claude/agents/driver.md" in dry.stdout
    assert not (project.root / ".claude").exists()
    assert run().returncode == 0
    (project.root / ".claude" / "agents" / "driver.md").write_text("mine\n")
    kept = run()
    assert "kept .claude/agents/driver.md: you changed it" in kept.stdout + kept.stderr
    forced = run("--force")
    assert "overwrote your .claude/agents/driver.md" in forced.stdout
