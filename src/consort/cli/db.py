"""`consort db ...`: the project's database server."""

from __future__ import annotations

import click

from consort.cli.kit import confirm, handled, project


def register(group: click.Group) -> None:
    group.add_command(db)


@click.group()
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
    from consort.app import db as api
    from consort.cli import ui

    outcome = api.start(project(), port)
    status = outcome.status
    where = f"127.0.0.1:{status.port}"
    if outcome.started:
        ui.done(f"database server started on {where} (pid {status.pid})")
    else:
        ui.say(f"database server already running on {where} (pid {status.pid})")


@db.command("stop")
@handled
def db_stop() -> None:
    """Stop the server cleanly."""
    from consort.app import db as api
    from consort.cli import ui

    if api.stop(project()):
        ui.done("database server stopped")
    else:
        ui.say("database server was not running")


@db.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@handled
def db_status(as_json: bool) -> None:
    """Tell what runs where."""
    from consort.app import db as api
    from consort.cli import ui

    status = api.status(project())
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
@click.option("--json", "as_json", is_flag=True, help="Print what was deleted as JSON.")
@handled
def db_destroy(yes: bool, as_json: bool) -> None:
    """Delete every database of this project.

    Embedded: stop the server and delete the cluster with every branch database in it.
    backend = "postgres": drop this project's own databases and roles on the shared server
    (those carrying its name prefix that Consort made), and nothing else.
    `consort init` makes a new, empty one afterwards.
    """
    from consort.app import db as api
    from consort.cli import ui

    outcome = api.destroy(project(), None if yes else confirm)
    if as_json:
        ui.print_json(outcome.as_json())
        return
    if outcome.cluster is not None:
        ui.done(f"deleted the cluster in {outcome.cluster}")
        return
    for name in outcome.dropped:
        ui.say(f"dropped {name}")
    ui.done(
        f"dropped {len(outcome.dropped)} database(s) and role(s) of this project"
        if outcome.dropped
        else "nothing of this project's left to drop on the server"
    )


@db.command("url")
@click.argument("branch", required=False)
@handled
def db_url(branch: str | None) -> None:
    """Print the URL of BRANCH's database (default: the checked-out branch).

    The URL logs in as the branch's own role, which can open that database only.
    """
    from consort.app import db as api

    click.echo(api.url(project(), branch))


@db.command("gc")
@click.option("--json", "as_json", is_flag=True, help="Print what was collected as JSON.")
@handled
def db_gc(as_json: bool) -> None:
    """Stop and remove the database clusters on this machine whose project is gone."""
    from consort.app import db as api
    from consort.cli import ui

    collected = api.gc()
    if as_json:
        ui.print_json([c.as_json() for c in collected])
        return
    for cluster in collected:
        for line in cluster.done:
            ui.done(f"{line} (project {cluster.project or 'unknown'})")
    if not collected:
        ui.say("nothing to collect: every cluster on this machine belongs to a project")
