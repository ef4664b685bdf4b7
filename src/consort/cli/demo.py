"""`consort demo`: the StockFlow sample, end to end."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from consort.cli.kit import handled

if TYPE_CHECKING:
    from consort.app.project import Project


# Console markup: the table's name escaped, or Rich would take "[gates]" for a style and drop it.
GATES_HINT = '(gates mode is proxy; set \\[gates] mode = "interactive" to approve them yourself)'


def _consort() -> str:
    """How to call this Consort: plain `consort` when the shell finds this one, else its path."""
    import shutil

    here = Path(sys.executable).parent / "consort"
    found = shutil.which("consort")
    if found is not None and Path(found).resolve() == here.resolve():
        return "consort"
    return str(here) if here.exists() else "consort"


def _say_server_left_running(project: Project) -> None:
    """The demo leaves its database server running (the app and the commands above use it):
    say so, and how to stop it."""
    from consort.app import db
    from consort.cli import ui

    for line in server_left_running(db.status(project).running, project.root):
        ui.say(line)


def server_left_running(running: bool, root: Path) -> list[str]:
    if not running:
        return []
    return [
        "the demo's PostgreSQL server is still running (the app and the commands above use it);",
        f"  stop it when you are done: cd {root} && {_consort()} db stop",
    ]


def register(group: click.Group) -> None:
    group.add_command(demo)


@click.command()
@click.argument("directory", required=False, type=click.Path(path_type=Path))
@click.option("--setup-only", is_flag=True, help="Prepare the project without driving it.")
@handled
def demo(directory: Path | None, setup_only: bool) -> None:
    """Build StockFlow, a small inventory app, from the product owner's words to a promoted main
    branch: design, build, deploy and promote, with replayed agents and the human proxy.

    DIRECTORY defaults to a new ./stockflow-demo folder.
    """
    from consort.app import demo as sample
    from consort.cli import ui

    ui.say("[bold yellow]" + "=" * 78 + "[/]")
    for line in (
        "DEMO MODE: agents are REPLAYED from a recording, and every gate is passed",
        "by the HUMAN PROXY policy (recorded as 'proxy' in the ledger), not a person.",
    ):
        ui.say(f"[bold yellow]  {line}[/]")
    ui.say("[bold yellow]" + "=" * 78 + "[/]")
    project = sample.setup(directory, ui.step)
    where = project.root
    if setup_only:
        ui.done(f"StockFlow is set up in {where}")
        ui.say(f"step through it: cd {where} && consort next && consort drive --max-steps 1")
        ui.say(GATES_HINT)
        return
    report = sample.run(project, ui.step)
    if report.code != 0:
        ui.error(f"the demo stopped: {report.message}")
        ui.say(f"look around: cd {where} && {_consort()} status && {_consort()} log")
        _say_server_left_running(project)
        sys.exit(int(report.code))
    total = sum(report.seconds.values())
    ui.say("")
    ui.done(f"StockFlow built and promoted in {total:.0f} s  ({where})")
    ui.table(
        "What happened",
        ["what", "value"],
        [[name, str(value)] for name, value in report.facts.items()]
        + [[f"time: {lane}", f"{seconds:.1f} s"] for lane, seconds in report.seconds.items()],
    )
    ui.say("look around:")
    ui.say(f"  cd {where}")
    ui.say(f"  {_consort()} status        # features, gates, branches")
    ui.say(f"  {_consort()} log           # every event, hash-chained")
    ui.say(f"  {_consort()} verify        # re-prove every gate and cycle")
    ui.say(
        f"  {sys.executable} -m uvicorn app.main:app --port 8000   # then open http://127.0.0.1:8000/"
    )
    _say_server_left_running(project)
