"""`consort guard` (the agents' PreToolUse hook) and `consort update-agents` (the `.claude/`
files)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from consort.cli.kit import handled, project


def register(group: click.Group) -> None:
    group.add_command(guard)
    group.add_command(update_agents)


@click.command("guard")
@click.option(
    "--tree",
    type=click.Path(path_type=Path, file_okay=False),
    help="The turn's working tree (default: the hook's cwd).",
)
@click.option(
    "--refuse-terminal-programs",
    is_flag=True,
    help="Also refuse commands that start an interactive program (a bare shell, a REPL, an "
    "editor): input typed into it later reaches no hook.",
)
@handled
def guard(tree: Path | None, refuse_terminal_programs: bool) -> None:
    """PreToolUse hook for coding agents: refuse a write to a protected path of this turn.

    Reads the hook's JSON on stdin and the turn's task.json ($CONSORT_TASK). Exits 0 to allow
    the tool call, 2 to refuse it (the reason on stderr). Outside a turn it allows everything;
    inside one, input it cannot read is refused.
    """
    from consort.app.guard import decide

    try:
        decision = decide(
            sys.stdin.read(),
            os.environ,
            tree.absolute() if tree else None,
            terminal_programs=not refuse_terminal_programs,
        )
    except Exception as exc:  # a hook that fails open would let the write through
        click.echo(f"consort guard: internal error, refusing to be safe: {exc}", err=True)
        sys.exit(2)
    if not decision.allowed:
        click.echo(decision.reason, err=True)
    sys.exit(decision.exit_code)


@click.command("update-agents")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--force", is_flag=True, help="Also replace files you changed.")
@handled
def update_agents(dry_run: bool, force: bool) -> None:
    """Refresh .claude/agents/<role>.md and the /plan /design /build /deploy commands from the
    role prompts, leaving files you changed alone (unless --force)."""
    from consort.app.agents import FileChange, update_agents
    from consort.cli import ui

    report = update_agents(project(), dry_run=dry_run, force=force)
    verbs = {
        FileChange.CREATED: "would create" if dry_run else "created",
        FileChange.UPDATED: "would update" if dry_run else "updated",
        FileChange.OVERWRITTEN: "would overwrite your" if dry_run else "overwrote your",
    }
    for changed in report.changed:
        ui.done(f"{verbs[changed.change]} {changed.path}")
    for path in report.kept:
        ui.warn(f"kept {path}: you changed it (--force replaces it)")
    if not report.changed:
        ui.say("the .claude/ files are up to date" + (" (but see above)" if report.kept else ""))
