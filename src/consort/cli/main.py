"""The command-line adapter: parses arguments, calls the command API, prints. No logic here.

Heavy modules (Rich, pydantic, psycopg) are imported inside the commands, so that
`consort --version` and `--help` start fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from consort import __version__
from consort.cli.kit import handled
from consort.core.errors import ExitCode


def _project() -> Any:
    from consort.core.project import find_project

    return find_project()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="consort")
def cli() -> None:
    """Consort: agents write the code, a program decides every step, tests on real Postgres
    decide when it is done.

    Start with `consort init`, then `consort doctor` to see what runs where.
    """


# ---- init / doctor ------------------------------------------------------------------------


@cli.command()
@click.argument("directory", required=False, type=click.Path(path_type=Path), default=Path("."))
@click.option("--template", help="Lay down a project scaffold first (python-fastapi).")
@handled
def init(directory: Path, template: str | None) -> None:
    """Set up Consort in DIRECTORY (default: here): git repository, consort.toml, .gitignore
    entries, the embedded database with the first branch's database, and the post-checkout hook.

    An existing folder or git repository is adopted without touching its code; running init
    again is safe.
    """
    from consort.app.init import init as run_init
    from consort.cli import ui

    with ui.console().status("setting up Consort ..."):
        report = run_init(directory, template=template)
    for line in report.done:
        ui.done(line)
    for line in report.warnings:
        ui.warn(line)
    if not report.done:
        ui.say(f"{report.root} is already set up; nothing to do")
    ui.say("next: `consort doctor` to check the set-up, `consort branch list` to see branches")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@handled
def doctor(as_json: bool) -> None:
    """Report the versions of everything Consort uses, where the database runs, and problems."""
    from consort.app.doctor import CheckState, checks
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
    ui.table(None, ["", "check", "detail"], [[marks[c.state], c.name, c.detail] for c in found])
    if any(c.state is CheckState.FAIL for c in found):
        sys.exit(int(ExitCode.USAGE))


# ---- db -----------------------------------------------------------------------------------


@cli.group()
def db() -> None:
    """The project's database server (embedded PostgreSQL, started on demand)."""


@db.command("start")
@click.option(
    "--port",
    type=int,
    default=None,
    help="Move the server to this port (0: any free port). URLs in .env follow.",
)
@handled
def db_start(port: int | None) -> None:
    """Start the server (nothing happens if it already runs)."""
    from consort.app import dbserver
    from consort.cli import ui

    project = _project()
    started, status = dbserver.start(project, port)
    where = f"127.0.0.1:{status.port}"
    if started:
        ui.done(f"database server started on {where} (pid {status.pid})")
    else:
        ui.say(f"database server already running on {where} (pid {status.pid})")
    if port is not None:
        from consort.adapters.paired import PairedBranches

        PairedBranches(project).refresh_env(PairedBranches(project).git.current_branch())


@db.command("stop")
@handled
def db_stop() -> None:
    """Stop the server cleanly."""
    from consort.app import dbserver
    from consort.cli import ui

    if dbserver.stop(_project()):
        ui.done("database server stopped")
    else:
        ui.say("database server was not running")


@db.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@handled
def db_status(as_json: bool) -> None:
    """Tell what runs where."""
    from consort.app import dbserver
    from consort.cli import ui

    status = dbserver.status(_project())
    if as_json:
        ui.print_json(status.as_json())
        return
    state = f"running (pid {status.pid})" if status.running else "stopped"
    ui.say(f"backend:  {status.backend.value}")
    ui.say(f"server:   {state} on {status.host}:{status.port}")
    if status.data_dir:
        ui.say(f"data:     {status.data_dir}")
        ui.say(f"runs as:  {status.run_as or 'you'}")
        ui.say(f"copies:   {status.copy_method}")


@db.command("destroy")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@handled
def db_destroy(yes: bool) -> None:
    """Stop the server and delete this project's cluster with every branch database in it.

    `consort init` makes a new, empty one afterwards.
    """
    from consort.app import dbserver
    from consort.cli import ui
    from consort.core.errors import UsageError
    from consort.lanes.humans import has_terminal

    project = _project()
    if not yes and not has_terminal():
        raise UsageError("deleting every database needs a confirmation", fix="--yes")
    if not yes and not click.confirm(
        f"Delete every database of {project.root} (branches included)?", default=False
    ):
        raise UsageError("nothing deleted")
    ui.done(f"deleted the cluster in {dbserver.destroy(project)}")


@db.command("url")
@click.argument("branch", required=False)
@handled
def db_url(branch: str | None) -> None:
    """Print the URL of BRANCH's database (default: the checked-out branch).

    The URL logs in as the branch's own role, which can open that database only.
    """
    from consort.app import dbserver

    click.echo(dbserver.url(_project(), branch))


# ---- branch -------------------------------------------------------------------------------


@cli.group()
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
    from consort.adapters.db.branching import TemplateMode
    from consort.app import branch as cmd
    from consort.cli import ui

    mode = TemplateMode.SNAPSHOT if snapshot else TemplateMode.DISCONNECT
    with ui.console().status(f"creating {name} ..."):
        info = cmd.create(_project(), name, parent, mode)
    ui.done(f"created branch {name} with database {info.database}")
    ui.say(f"switch to it with `consort branch switch {name}`")


@branch.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the branches as JSON.")
@handled
def branch_list(as_json: bool) -> None:
    """List branches with their databases."""
    from consort.app import branch as cmd
    from consort.cli import ui

    rows = cmd.list_rows(_project())
    if as_json:
        ui.print_json([r.as_json() for r in rows])
        return
    ui.table(
        None,
        ["", "branch", "database", "parent", "size", "state"],
        [
            [
                "*" if r.current else "",
                r.name,
                r.database or "-",
                r.parent or "-",
                _size(r.size_bytes),
                r.pairing.value,
            ]
            for r in rows
        ],
    )


def _size(size: int | None) -> str:
    if size is None:
        return "-"
    return f"{size / 1_048_576:.1f} MB"


@branch.command("switch")
@click.argument("name")
@handled
def branch_switch(name: str) -> None:
    """Check out NAME and point .env's DATABASE_URL at its database."""
    from consort.app import branch as cmd
    from consort.cli import ui

    cmd.switch(_project(), name)
    ui.done(f"switched to {name}; DATABASE_URL in .env points at its database")


@branch.command("delete")
@click.argument("name")
@click.option("--force", is_flag=True, help="Delete unmerged work and child branches' links.")
@handled
def branch_delete(name: str, force: bool) -> None:
    """Delete branch NAME and drop its database."""
    from consort.app import branch as cmd
    from consort.cli import ui

    cmd.delete(_project(), name, force)
    ui.done(f"deleted branch {name} and its database")


@branch.command("diff")
@click.argument("name")
@click.option("--against", help="Compare with this branch (default: NAME's parent).")
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
@handled
def branch_diff(name: str, against: str | None, as_json: bool) -> None:
    """Show how NAME's database schema differs from its parent's."""
    from consort.app import branch as cmd
    from consort.cli import ui

    base, result = cmd.diff(_project(), name, against)
    if as_json:
        ui.print_json({"base": base, "branch": name, **result.as_json()})
        return
    if result.is_empty:
        ui.say(f"no schema differences between {base} and {name}")
        return
    ui.say(f"schema of {name} against {base}:")
    for line in result.lines():
        click.echo(f"  {line}")


@branch.command("gc")
@handled
def branch_gc() -> None:
    """Drop databases whose git branch is gone and leftovers of interrupted runs."""
    from consort.app import branch as cmd
    from consort.cli import ui

    dropped = cmd.gc(_project())
    for name in dropped:
        ui.done(f"dropped {name}")
    if not dropped:
        ui.say("nothing to collect")


# ---- hooks (called by git) -----------------------------------------------------------------


@cli.group(hidden=True)
def hook() -> None:
    """Entry points for the git hooks Consort installs."""


@hook.command("post-checkout", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1)
@handled
def hook_post_checkout(args: tuple[str, ...]) -> None:
    from consort.app.hook import run_post_checkout

    click.echo(f"consort: {run_post_checkout(Path.cwd())}", err=True)


# Command groups that live in their own modules. Each module defines `register(group)` and imports
# only click at module level, so that start-up stays fast. One line per module.
COMMAND_MODULES: tuple[str, ...] = (
    "consort.cli.log",
    "consort.cli.schema",
    "consort.cli.orchestrate",
    "consort.cli.guard",
    "consort.cli.demo",
)


def _register_modules() -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(cli)


_register_modules()


def main() -> None:
    cli(prog_name="consort")
