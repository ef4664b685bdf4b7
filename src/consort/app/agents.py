"""`consort update-agents`: the `.claude/` files (role agents, slash commands) of a project."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from consort.core.project import Project


class FileChange(StrEnum):
    CREATED = "created"
    UPDATED = "updated"  # Consort's own earlier version, replaced
    OVERWRITTEN = "overwritten"  # changed by the user, replaced because of `force`


@dataclass(frozen=True)
class ChangedFile:
    path: str  # relative to the project root
    change: FileChange


@dataclass(frozen=True)
class AgentFilesReport:
    dry_run: bool  # True: the changes are what would be done; nothing was written
    changed: list[ChangedFile] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # changed by the user: left alone

    def as_json(self) -> dict[str, object]:
        return {
            "dry_run": self.dry_run,
            "changed": [{"path": f.path, "change": f.change.value} for f in self.changed],
            "kept": self.kept,
        }


def update_agents(
    project: Project, *, dry_run: bool = False, force: bool = False
) -> AgentFilesReport:
    """Refresh the files from the role prompts, leaving files the user changed alone (unless
    `force`); with `dry_run`, only say what would change."""
    from consort.adapters.agents.claude_files import FileAction, sync

    changes = {
        FileAction.CREATE: FileChange.CREATED,
        FileAction.UPDATE: FileChange.UPDATED,
        FileAction.OVERWRITE: FileChange.OVERWRITTEN,
    }
    synced = sync(project, dry_run=dry_run, force=force)
    return AgentFilesReport(
        dry_run=dry_run,
        changed=[ChangedFile(f.path, changes[f.action]) for f in synced.changed],
        kept=[f.path for f in synced.kept],
    )
