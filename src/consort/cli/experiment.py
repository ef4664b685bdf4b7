"""`consort experiment F/S ...`: named by the command contract, not built yet.

The command exists so that `consort experiment --help` and every use of it say plainly that
experiments cannot be run yet (exit 2, a usage or environment problem), instead of an unknown
command; nothing is done and nothing is recorded.
"""

from __future__ import annotations

import click

from consort.cli.kit import handled


def register(group: click.Group) -> None:
    group.add_command(experiment)


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@handled
def experiment(args: tuple[str, ...]) -> None:
    """Experiments: NOT BUILT YET. Racing several approaches to one story (run, compare,
    select) is planned; today this command only says so. For a throwaway exploration, use
    `consort spike NAME --for F`."""
    from consort.app.errors import UsageError

    raise UsageError(
        "experiments (consort experiment F/S ...) are not built yet: nothing was run or recorded",
        fix="explore an approach with `consort spike NAME --for F` instead",
    )
