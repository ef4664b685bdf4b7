"""The files that let a person drive Consort from inside Claude Code.

- `.claude/agents/<role>.md`: one subagent per role (front matter: name, description, tools;
  body: the project's role prompt from `.consort/roles/<role>.md`, else Consort's own);
- `.claude/commands/{plan,design,build,deploy}.md`: the slash commands `/plan` (record a feature
  request, then `consort next`), `/design`, `/build`, `/deploy` (each `consort drive --until
  <lane>`, then `consort next`).

`consort init` writes them; `consort update-agents` refreshes them (after a role prompt changed,
or a new Consort version) without overwriting a file the user changed: Consort keeps the SHA-256
of every file it wrote in `.consort/claude-manifest.json`, and a file whose content no longer has
that hash is the user's (kept, unless `--force`). A file that was there before Consort wrote one
is the user's too.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from consort.core.errors import ConsortError
from consort.core.fsutil import atomic_write_json, atomic_write_text
from consort.core.project import Project
from consort.core.vocabulary import Role

MANIFEST_VERSION = 1
AGENTS_DIR = ".claude/agents"
COMMANDS_DIR = ".claude/commands"

# Tools of Claude Code 2.1: Grep, Glob and MultiEdit are gone (search runs through Bash, which
# the guard reads); a subagent naming a tool the CLI lacks simply goes without it.
_DESIGN_TOOLS = "Read, Write, Bash"
_TOOLS = {
    Role.SPEC_AUTHOR: _DESIGN_TOOLS,
    Role.ARCHITECT: _DESIGN_TOOLS,
    Role.DBA: _DESIGN_TOOLS,
    Role.TEST_STRATEGIST: _DESIGN_TOOLS,
    Role.UX_DESIGNER: _DESIGN_TOOLS,
    Role.NAVIGATOR: "Read, Write, Edit, Bash",
    Role.DRIVER: "Read, Write, Edit, Bash",
    Role.EXPLORER: "Read, Write, Edit, Bash",
}


def subagent_tools() -> set[str]:
    """Every tool a role's subagent file names."""
    return {tool.strip() for tools in _TOOLS.values() for tool in tools.split(",")}


_DESCRIPTIONS = {
    Role.SPEC_AUTHOR: "Consort's spec author: turns a feature request into a feature spec of "
    "stories and testable acceptance criteria. Use for Consort `spec` turns.",
    Role.ARCHITECT: "Consort's architect: decides the components, layers and interfaces a "
    "feature spec needs. Use for Consort `architecture` turns.",
    Role.DBA: "Consort's DBA: designs the tables, constraints and migrations a feature needs. "
    "Use for Consort `db-design` turns.",
    Role.TEST_STRATEGIST: "Consort's test strategist: turns acceptance criteria into an ordered "
    "test list. Use for Consort `test-list` turns.",
    Role.UX_DESIGNER: "Consort's UX designer: screens and flows of a user-facing feature. Use "
    "for Consort `ux` turns.",
    Role.NAVIGATOR: "Consort's navigator: writes the one failing test of a test-list item (red) "
    "and reviews the driver's code (review). Use for Consort `red` and `review` turns.",
    Role.DRIVER: "Consort's driver: writes the least code that makes the failing test pass "
    "(green, repair) and refactors it (refactor). Never touches tests.",
    Role.EXPLORER: "Consort's spike explorer: tries one question out in a throwaway spike and "
    "writes what it learned to notes.md. Use for Consort `explore` turns.",
}


@dataclass(frozen=True)
class _Command:
    name: str
    description: str
    allowed_tools: str
    argument_hint: str
    body: str


_REPORT = """\
Then report to the user, briefly: what `consort drive` did, where it stopped and why, and the
exact command `consort next` prints. Exit code 0 means done or stopped cleanly at a gate, 1 an
error, 2 a usage or environment problem, 3 an escalation that waits for a person, 4 an integrity
violation.

Never approve or reject a gate yourself, never edit anything under `.consort/`, and never change
tests or artifacts by hand to get past a stop: a person decides at every gate.
"""


def _drive_command(lane: str, what: str) -> _Command:
    return _Command(
        name=lane,
        description=f"Consort {lane} lane: {what}, then show the next step",
        allowed_tools="Bash(consort drive:*), Bash(consort next:*)",
        argument_hint="[feature, e.g. F1]",
        body=f"""\
Run Consort's {lane} lane from the project root ({what}).

1. Run `consort drive --until {lane}`. If a feature was given ("$ARGUMENTS" is not empty), run
   `consort drive --until {lane} --feature $ARGUMENTS` instead.
2. Run `consort next` (with `--feature $ARGUMENTS` when a feature was given).

{_REPORT}""",
    )


COMMANDS = (
    _Command(
        name="plan",
        description="Consort plan lane: record a feature request, then show the next step",
        allowed_tools="Bash(consort intake:*), Bash(consort next:*), Bash(consort status:*)",
        argument_hint="[the feature request, in the product owner's words]",
        body="""\
Record a feature request in Consort (the plan lane), from the project root.

1. If the user gave a request ("$ARGUMENTS" is not empty), pass their words unchanged on
   standard input: `consort intake feature` reads the request from stdin when it is not a
   terminal (for example `printf '%s\\n' "<the request>" | consort intake feature`). Add
   `--user-facing` when the feature has a user interface. Do not rewrite or expand the request:
   it is the product owner's text.
   Without a request, run `consort status` instead and ask the user for one.
2. Run `consort next`.

"""
        + _REPORT,
    ),
    _drive_command(
        "design", "spec, architecture, DB design, test list and UX up to the design gate"
    ),
    _drive_command("build", "red, green and refactor cycles of every story, run and verified"),
    _drive_command("deploy", "migrations and the full suite on a throwaway database branch"),
)


class FileAction(StrEnum):
    CREATE = "create"
    UPDATE = "update"  # Consort's own earlier version: replaced
    UNCHANGED = "unchanged"
    KEEP = "keep"  # changed by the user: left alone
    OVERWRITE = "overwrite"  # changed by the user, replaced because of --force


@dataclass(frozen=True)
class PlannedFile:
    path: str  # relative to the project root
    action: FileAction


@dataclass
class SyncReport:
    files: list[PlannedFile] = field(default_factory=list)
    dry_run: bool = False

    @property
    def changed(self) -> list[PlannedFile]:
        writes = (FileAction.CREATE, FileAction.UPDATE, FileAction.OVERWRITE)
        return [f for f in self.files if f.action in writes]

    @property
    def kept(self) -> list[PlannedFile]:
        return [f for f in self.files if f.action is FileAction.KEEP]


def desired_files(project: Project) -> dict[str, str]:
    """Every file Consort writes into `.claude/`, by path relative to the root."""
    from consort.roles import prompt_for

    files = {
        f"{AGENTS_DIR}/{role}.md": agent_file(role, prompt_for(role, project)) for role in Role
    }
    for command in COMMANDS:
        files[f"{COMMANDS_DIR}/{command.name}.md"] = command_file(command)
    return files


def agent_file(role: Role, prompt: str) -> str:
    return (
        "---\n"
        f"name: {role}\n"
        f"description: {_DESCRIPTIONS[role]}\n"
        f"tools: {_TOOLS[role]}\n"
        "---\n\n"
        f"{prompt.rstrip()}\n"
    )


def command_file(command: _Command) -> str:
    return (
        "---\n"
        f"description: {command.description}\n"
        f"argument-hint: {json.dumps(command.argument_hint)}\n"
        f"allowed-tools: {command.allowed_tools}\n"
        "---\n\n"
        f"{command.body.rstrip()}\n"
    )


def manifest_path(project: Project) -> Path:
    return project.layout.claude_manifest


def sync(project: Project, *, dry_run: bool = False, force: bool = False) -> SyncReport:
    """Bring `.claude/` up to date; what was (or, with `dry_run`, would be) done to each file."""
    manifest = _read_manifest(project)
    report = SyncReport(dry_run=dry_run)
    for relative, text in desired_files(project).items():
        path = project.root / relative
        action = _plan(path, text, manifest.get(relative), force=force)
        report.files.append(PlannedFile(relative, action))
        if dry_run or action is FileAction.KEEP:
            continue
        if action is not FileAction.UNCHANGED:
            atomic_write_text(path, text)
        manifest[relative] = _digest(text)
    if not dry_run:
        atomic_write_json(
            manifest_path(project),
            {"version": MANIFEST_VERSION, "files": dict(sorted(manifest.items()))},
        )
    return report


def _plan(path: Path, text: str, written: str | None, *, force: bool) -> FileAction:
    if not path.exists():
        return FileAction.CREATE
    current = path.read_bytes()
    if current == text.encode("utf-8"):
        return FileAction.UNCHANGED
    if written is not None and hashlib.sha256(current).hexdigest() == written:
        return FileAction.UPDATE  # still exactly what Consort wrote last time
    return FileAction.OVERWRITE if force else FileAction.KEEP


def _read_manifest(project: Project) -> dict[str, str]:
    path = manifest_path(project)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConsortError(
            f"{path} is not valid JSON: {exc}",
            fix="delete it; `consort update-agents` then treats every existing file as yours",
        ) from exc
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise ConsortError(f"{path} has no `files` table", fix="delete it and run again")
    return {str(k): str(v) for k, v in files.items()}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def init_lines(project: Project) -> tuple[list[str], list[str]]:
    """`consort init`'s step: write the `.claude/` files, leaving the user's own alone.

    Returns what was done and what to warn about, for init's report.
    """
    result = sync(project)
    done: list[str] = []
    warnings: list[str] = []
    created = [f for f in result.changed if f.action is FileAction.CREATE]
    if created:
        done.append(
            f"wrote {len(created)} Claude Code file(s) in .claude/ (role agents and the /plan, "
            "/design, /build, /deploy commands)"
        )
    if result.kept:
        names = ", ".join(f.path for f in result.kept)
        warnings.append(f"kept your own {names}; `consort update-agents --force` replaces them")
    return done, warnings
