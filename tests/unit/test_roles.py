"""Role prompts: shipped in the package, overridable per project."""

from __future__ import annotations

from pathlib import Path

import pytest

from consort.core.errors import UsageError
from consort.core.project import Project
from consort.core.vocabulary import Role
from consort.roles import override_path, packaged_prompt, prompt_for


@pytest.mark.parametrize("role", list(Role))
def test_every_role_ships_a_prompt_with_its_job_inputs_outputs_and_limits(role: Role) -> None:
    text = packaged_prompt(role)
    for heading in ("## Your one job", "## Inputs", "## Outputs", "## Limits"):
        assert heading in text, f"{role}.md lacks {heading}"
    assert "CONSORT_TASK" in text


def test_the_driver_and_navigator_prompts_state_their_limits() -> None:
    driver = packaged_prompt(Role.DRIVER)
    assert "least code" in driver
    assert "Never touch the tests" in driver
    navigator = packaged_prompt(Role.NAVIGATOR)
    assert "one failing test" in navigator
    assert "never change an existing test" in navigator
    assert "review" in navigator


def test_a_project_file_overrides_the_packaged_prompt(tmp_path: Path) -> None:
    project = Project(tmp_path)
    path = override_path(project, Role.DRIVER)
    assert path == tmp_path / ".consort" / "roles" / "driver.md"
    path.parent.mkdir(parents=True)
    path.write_text("# Our driver\nUse the house style.\n")
    assert prompt_for(Role.DRIVER, project) == "# Our driver\nUse the house style.\n"
    assert prompt_for(Role.NAVIGATOR, project) == packaged_prompt(Role.NAVIGATOR)


def test_an_empty_override_is_an_error_not_a_silent_empty_prompt(tmp_path: Path) -> None:
    project = Project(tmp_path)
    path = override_path(project, Role.DBA)
    path.parent.mkdir(parents=True)
    path.write_text("  \n")
    with pytest.raises(UsageError, match="is empty"):
        prompt_for(Role.DBA, project)
