"""`consort mcp` and `consort dashboard`: the front ends that sit beside the terminal's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from consort.cli.kit import handled

if TYPE_CHECKING:
    from consort.dashboard.server import Started


def register(group: click.Group) -> None:
    group.add_command(mcp)
    group.add_command(dashboard)


@click.command()
@handled
def mcp() -> None:
    """Serve Consort's tools to your coding agent over stdio (Model Context Protocol).

    Status, next, log, verify, branches and their databases (a branch's own login only), the
    artifacts' schemas and a cycle's evidence. Approving, rejecting and amending stay yours.
    `consort init` registers it for Claude Code in .mcp.json.
    """
    from consort.mcp.server import serve

    serve(Path.cwd())


@click.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="the port on 127.0.0.1 (0: a free one)",
)
@click.option("--open", "open_browser", is_flag=True, help="open the page in your browser")
@click.option(
    "--editor",
    is_flag=True,
    help="for the VS Code extension: print one JSON line (URL and token) on standard output, "
    "which must be a pipe, and stop when standard input closes",
)
@handled
def dashboard(port: int, open_browser: bool, editor: bool) -> None:
    """A live view of the project in your browser, on 127.0.0.1 only.

    Features and lanes, gates with what they cover, cycles with their evidence, escalations,
    violations, branches and their schema diffs, agent turns and what they cost, and the
    verdict of `consort verify`, updated as the ledger grows. Started at a terminal, it prints a
    token: type it on the page to approve or reject there. Without it the page is read-only.
    """
    from consort.dashboard.server import serve

    def announce(started: Started) -> None:
        if editor:
            import json

            click.echo(json.dumps(started.as_json(), separators=(",", ":")))
            return
        click.echo(f"Consort dashboard: {started.url}  (Ctrl-C stops it)")
        if started.token is not None:
            click.echo(f"Token for approving and rejecting on the page: {started.token}")
            click.echo("  It lives in this process only: nothing stores it; type it on the page.")
        else:
            click.echo(f"Read-only: {started.read_only_reason}.")
        if open_browser:
            import webbrowser

            webbrowser.open(started.url)

    serve(Path.cwd(), port, announce, editor=editor)
