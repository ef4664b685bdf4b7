"""`consort mcp` and `consort dashboard`: the front ends that sit beside the terminal's."""

from __future__ import annotations

from pathlib import Path

import click

from consort.cli.kit import handled


def register(group: click.Group) -> None:
    group.add_command(mcp)


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
