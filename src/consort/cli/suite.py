"""`consort test [BRANCH]`: the suite as Consort runs it."""

from __future__ import annotations

import sys

import click

from consort.cli.kit import handled, project


def register(group: click.Group) -> None:
    group.add_command(test)


@click.command("test")
@click.argument("branch", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON.")
@handled
def test(branch: str | None, as_json: bool) -> None:
    """Run the suite at BRANCH's commit (default: the checked-out branch) the way Consort does:
    migrated and tested on a throwaway copy of the branch's database, dropped afterwards, and
    judged by the JUnit rules GREEN uses. Exits 1 when it does not pass."""
    from consort.app.errors import ExitCode
    from consort.app.suite import run_tests
    from consort.cli import ui

    outcome = run_tests(project(), branch)
    if as_json:
        ui.print_json(outcome.as_json())
    else:
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(outcome.counts.items()) if n)
        where = f"{outcome.branch} at {outcome.commit[:12]} (run {outcome.run})"
        if outcome.passed:
            ui.done(f"the suite passes on {where}: {counts or 'no tests'}")
        else:
            ui.error(f"the suite does not pass on {where}: {counts or 'no report'}")
            for problem in outcome.problems:
                ui.say(f"  {problem}")
        ui.say(
            "(a throwaway copy of the branch's database was used and dropped; uncommitted "
            "changes are not part of the run)"
        )
    if not outcome.passed:
        sys.exit(int(ExitCode.ERROR))
