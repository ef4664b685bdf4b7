"""`consort init` and `consort doctor`: setting a project up, and checking what runs where."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from consort.cli.kit import handled


def register(group: click.Group) -> None:
    group.add_command(init)
    group.add_command(doctor)


@click.command()
@click.argument("directory", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.option(
    "--template", help="Lay down a project scaffold first (python-fastapi, node-express)."
)
@click.option(
    "--db-binaries",
    default=None,
    help='Whose PostgreSQL runs the embedded cluster: "embedded" (the wheel, default), "system" '
    "(the machine's own, 15 or later, with pgcrypto and uuid-ossp), or a bin folder.",
)
@handled
def init(directory: Path, template: str | None, db_binaries: str | None) -> None:
    """Set up Consort in DIRECTORY (default: here): git repository, consort.toml, .gitignore
    entries, the embedded database with the first branch's database, and the post-checkout hook.

    An existing folder or git repository is adopted without touching its code; running init
    again is safe.
    """
    from consort.app.init import init as run_init
    from consort.cli import ui

    with ui.console().status("setting up Consort ..."):
        report = run_init(directory, template=template, db_binaries=db_binaries)
    for line in report.done:
        ui.done(line)
    for line in report.warnings:
        ui.warn(line)
    if not report.done:
        ui.say(f"{report.root} is already set up; nothing to do")
    from rich.markup import escape

    for number, step in enumerate(report.next_steps, start=1):
        ui.say(f"next ({number}): {escape(step)}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@handled
def doctor(as_json: bool) -> None:
    """Report the versions of everything Consort uses, where the database runs, and problems."""
    from consort.app.doctor import CheckState, checks
    from consort.app.errors import ExitCode
    from consort.cli import ui

    found = checks()
    if as_json:
        ui.print_json([c.as_json() for c in found])
        return
    marks = {
        CheckState.OK: "[green]ok[/]",
        CheckState.WARN: "[yellow]warn[/]",
        CheckState.FAIL: "[red]FAIL[/]",
        CheckState.INFO: "[dim]-[/]",
    }
    from rich.markup import escape

    # A detail names consort.toml tables ("[db] binaries"), which are not console markup.
    rows = [[marks[c.state], escape(c.name), escape(c.detail)] for c in found]
    ui.table(None, ["", "check", "detail"], rows)
    if any(c.state is CheckState.FAIL for c in found):
        sys.exit(int(ExitCode.USAGE))
