"""`consort branch ...`: paired git + database branches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from consort.cli import plain
from consort.cli.kit import handled, project

if TYPE_CHECKING:
    from consort.app.branch import BranchRow


def register(group: click.Group) -> None:
    group.add_command(branch)


@click.group()
def branch() -> None:
    """Paired branches: each git branch with its own copy of its parent's database."""


@branch.command("create")
@click.argument("name")
@click.option("--from", "parent", help="Parent branch (default: the checked-out branch).")
@click.option(
    "--snapshot",
    is_flag=True,
    help="Copy from a frozen snapshot of the parent instead of disconnecting its sessions.",
)
@handled
def branch_create(name: str, parent: str | None, snapshot: bool) -> None:
    """Create branch NAME: the git branch and its database, as one step."""
    from consort.app import branch as api
    from consort.cli import ui

    mode = api.TemplateMode.SNAPSHOT if snapshot else api.TemplateMode.DISCONNECT
    with ui.console().status(f"creating {name} ..."):
        created = api.create(project(), name, parent, mode)
    ui.done(f"created branch {name} with database {created.database}")
    ui.say(f"switch to it with `consort branch switch {name}`")


@branch.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the branches as JSON.")
@handled
def branch_list(as_json: bool) -> None:
    """List branches with their databases."""
    from consort.app import branch as api
    from consort.cli import ui

    rows = api.list_rows(project())
    if as_json:
        ui.print_json([r.as_json() for r in rows])
        return
    render_rows(rows)


def render_rows(rows: Sequence[BranchRow]) -> None:
    """The branches as a table; their names are never cut or wrapped."""
    from consort.cli import ui

    ui.table(
        None,
        [
            "",
            ui.Col("branch", whole=True),
            "database",
            ui.Col("parent", whole=True),
            "size",
            "state",
        ],
        [
            [
                "*" if r.current else "",
                r.name,
                r.database or "-",
                r.parent or "-",
                ui.megabytes(r.size_bytes),
                r.pairing.value,
            ]
            for r in rows
        ],
    )


@branch.command("switch")
@click.argument("name")
@handled
def branch_switch(name: str) -> None:
    """Check out NAME and point .env's DATABASE_URL at its database."""
    from consort.app import branch as api
    from consort.cli import ui

    api.switch(project(), name)
    ui.done(f"switched to {name}; DATABASE_URL in .env points at its database")


@branch.command("delete")
@click.argument("name")
@click.option("--force", is_flag=True, help="Delete unmerged work and child branches' links.")
@handled
def branch_delete(name: str, force: bool) -> None:
    """Delete branch NAME and drop its database."""
    from consort.app import branch as api
    from consort.cli import ui

    api.delete(project(), name, force)
    ui.done(f"deleted branch {name} and its database")


@branch.command("diff")
@click.argument("name")
@click.option("--against", help="Compare with this branch (default: NAME's parent).")
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
@handled
def branch_diff(name: str, against: str | None, as_json: bool) -> None:
    """Show how NAME's database schema differs from its parent's."""
    from consort.app import branch as api
    from consort.cli import ui

    found = api.diff(project(), name, against)
    if as_json:
        ui.print_json(found.as_json())
        return
    if found.is_empty:
        ui.say(f"no schema differences between {found.base} and {name}")
        return
    ui.say(f"schema of {name} against {found.base}:")
    for line in found.lines():
        click.echo(f"  {plain.visible(line)}")


@branch.command("gc")
@handled
def branch_gc() -> None:
    """Drop databases whose git branch is gone, what interrupted runs left behind, and the
    archived branches of closed experiments."""
    from consort.app import branch as api
    from consort.cli import ui

    collected = api.gc(project())
    for line in collected:
        ui.done(line)
    if not collected:
        ui.say("nothing to collect")
