"""`consort hook ...`: entry points of the git hooks Consort installs (hidden: git calls them)."""

from __future__ import annotations

from pathlib import Path

import click

from consort.cli.kit import handled


def register(group: click.Group) -> None:
    group.add_command(hook)


@click.group(hidden=True)
def hook() -> None:
    """Entry points for the git hooks Consort installs."""


@hook.command("post-checkout", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1)
@handled
def hook_post_checkout(args: tuple[str, ...]) -> None:
    from consort.app.hook import run_post_checkout

    click.echo(f"consort: {run_post_checkout(Path.cwd())}", err=True)
