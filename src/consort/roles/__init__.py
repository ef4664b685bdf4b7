"""Role prompts: one markdown file per role, shipped with Consort and overridable per project.

A project overrides a role's prompt by placing its own file at `.consort/roles/<role>.md`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from consort.core.errors import UsageError
from consort.core.project import Project
from consort.core.vocabulary import Role


def packaged_prompt(role: Role) -> str:
    """The prompt Consort ships for `role`."""
    return resources.files(__package__).joinpath(f"{role}.md").read_text(encoding="utf-8")


def override_path(project: Project, role: Role) -> Path:
    """Where a project puts its own prompt for `role`."""
    return project.layout.role_prompt(role)


def prompt_for(role: Role, project: Project) -> str:
    """The project's own prompt for `role` when it has one, else the packaged one."""
    override = override_path(project, role)
    if not override.is_file():
        return packaged_prompt(role)
    text = override.read_text(encoding="utf-8")
    if not text.strip():
        raise UsageError(
            f"role prompt {override} is empty",
            fix="write the prompt into it, or delete it to use the packaged one",
        )
    return text
