"""`consort verify`: re-prove the ledger, every gate and the evidence."""

from __future__ import annotations

import sys

import click

from consort.cli.kit import handled, project


def register(group: click.Group) -> None:
    group.add_command(verify)


@click.command()
@click.option("--json", "as_json", is_flag=True)
@handled
def verify(as_json: bool) -> None:
    """Re-check the ledger's hash chain, every gate's hashes and the evidence; exit 0 or 4."""
    from consort.app import verify as api
    from consort.cli import ui

    outcome = api.verify(project())
    if as_json:
        ui.print_json(outcome.as_json())
    else:
        for line in outcome.holds:
            ui.done(line)
        for line in outcome.warnings:
            ui.warn(line)
        for line in outcome.fails:
            ui.error(line)
    sys.exit(int(outcome.exit_code))
