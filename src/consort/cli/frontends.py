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
@click.option(
    "--install-extension",
    "install_extension",
    is_flag=True,
    help="install the Consort extension into VS Code (`code --install-extension`) and exit",
)
@click.option(
    "--vsix",
    type=click.Path(dir_okay=False, path_type=Path),
    help="the extension's package for --install-extension (default: the one built in "
    "editors/vscode of the Consort source this runs from)",
)
@handled
def dashboard(
    port: int, open_browser: bool, editor: bool, install_extension: bool, vsix: Path | None
) -> None:
    """A live view of the project in your browser, on 127.0.0.1 only.

    Features and lanes, gates with what they cover, cycles with their evidence, escalations,
    violations, branches and their schema diffs, agent turns and what they cost, and the
    verdict of `consort verify`, updated as the ledger grows. Started at a terminal, it prints a
    token: type it on the page to approve or reject there. Without it the page is read-only.

    With --open and VS Code's `code` command on PATH, it also says how to get the Consort
    extension (the page in an editor panel); --install-extension installs it, when you ask.
    """
    from consort.app.errors import UsageError
    from consort.dashboard.server import serve

    if editor and open_browser:
        raise UsageError(
            "--editor is for the VS Code extension, which shows the page itself", fix="drop --open"
        )
    if install_extension:
        from consort.app.editor import install

        installed = install(vsix)
        click.echo(f"Installed {installed.vsix} into VS Code ({installed.code}).")
        if installed.output:
            click.echo(installed.output)
        return

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

            from consort.app.editor import offer

            extension = offer()
            if extension is not None:
                for line in extension.lines():
                    click.echo(line)
            if webbrowser.open(started.url):
                click.echo(f"Opened {started.url} in your browser.")
            else:
                click.echo("No browser could be opened here: open the URL above yourself.")

    serve(Path.cwd(), port, announce, editor=editor)
