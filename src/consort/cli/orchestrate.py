"""Commands of the orchestrator: intake, drive, next, status, approve, reject, retry, verify."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from consort.cli.kit import handled

LANES = ("design", "build", "deploy", "done")
GATES = ("design", "story", "deploy", "promote")


def _project() -> Any:
    from consort.core.project import find_project

    return find_project()


def _confirm(text: str) -> bool:
    return click.confirm(text, default=False)


def register(group: click.Group) -> None:
    group.add_command(intake)
    group.add_command(drive)
    group.add_command(next_)
    group.add_command(status)
    group.add_command(approve)
    group.add_command(reject)
    group.add_command(retry)
    group.add_command(verify)
    group.add_command(amend)


@click.command()
@click.argument("kind", type=click.Choice(["product", "nfrs", "feature"]))
@click.option(
    "--file",
    "source",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Read the text from this file (default: open $EDITOR).",
)
@click.option("--title", help="Feature title (default: the first line of the text).")
@click.option(
    "--user-facing", is_flag=True, help="The feature has a user interface: add UX design."
)
@handled
def intake(kind: str, source: Path | None, title: str | None, user_facing: bool) -> None:
    """Record the product owner's words: the product overview, the NFRs, or a feature request."""
    from consort.cli import ui
    from consort.lanes.intake import IntakeKind, record

    if source is not None:
        text = source.read_text(encoding="utf-8")
    elif not sys.stdin.isatty():
        text = sys.stdin.read()
    else:
        text = click.edit(f"# {kind}: write it here, save and close\n") or ""
    result = record(_project(), IntakeKind(kind), text, title=title, user_facing=user_facing)
    if result.feature:
        ui.done(f"recorded feature {result.feature} ({result.path})")
        ui.say(f"next: `consort drive --feature {result.feature.split('-', 1)[0]}`")
    else:
        ui.done(f"recorded the {kind} ({result.path})")


@click.command()
@click.option("--feature", help="Only this feature (F1 or its full name).")
@click.option("--until", type=click.Choice(LANES), help="Stop once this lane is done.")
@click.option("--max-steps", type=click.IntRange(min=1), help="Stop after this many steps.")
@handled
def drive(feature: str | None, until: str | None, max_steps: int | None) -> None:
    """Run the loop: derive the state, do the next action, record it; until a gate, an
    escalation, the end, or a bound. Safe to interrupt (Ctrl-C) and to re-run."""
    from consort.cli import ui
    from consort.core.errors import ExitCode
    from consort.core.vocabulary import ActionKind, Lane
    from consort.lanes.loop import drive as run

    result = run(
        _project(),
        feature=feature,
        until=Lane(until) if until else None,
        max_steps=max_steps,
        progress=lambda line: ui.say(f"[dim]>[/dim] {line}"),
    )
    last = result.last
    prefix = f"{result.steps} step(s); "
    if result.code is ExitCode.OK:
        ui.done(prefix + result.message)
    else:
        ui.error(prefix + result.message)
    if last is not None and last.command:
        what = "approve with" if last.kind is ActionKind.AWAIT_GATE else "next"
        ui.say(f"{what}: {last.command}")
    sys.exit(int(result.code))


def _state() -> Any:
    from consort.core.derive import derive
    from consort.core.ledger import Ledger, ledger_path

    project = _project()
    path = ledger_path(project.state_dir)
    events = Ledger(path).read() if path.exists() else []
    return project, derive(events, project.config, project.state_dir)


@click.command("next")
@click.option("--feature", help="Only this feature.")
@click.option("--json", "as_json", is_flag=True)
@handled
def next_(feature: str | None, as_json: bool) -> None:
    """Show the next action and why (changes nothing)."""
    from consort.cli import ui
    from consort.core.machine import next_action
    from consort.lanes.intake import resolve_feature

    project, state = _state()
    key = resolve_feature(project, feature, [f.id for f in state.features]) if feature else None
    action = next_action(state, key)
    if as_json:
        ui.print_json(
            {
                "kind": action.kind.value,
                "lane": action.lane.value,
                "feature": action.feature,
                "role": action.role.value if action.role else None,
                "step": action.step.value if action.step else None,
                "attempt": action.attempt,
                "reason": action.reason,
                "command": action.command,
            }
        )
        return
    ui.say(f"[bold]{action.describe()}[/bold]  ({action.lane.value} lane)")
    ui.say(f"why: {action.reason}")
    if action.command:
        ui.say(f"run: {action.command}")


@click.command()
@click.option("--json", "as_json", is_flag=True)
@handled
def status(as_json: bool) -> None:
    """Features, their artifacts and gates, escalations, and branches."""
    from consort.app.status import collect
    from consort.cli import ui

    project, state = _state()
    report = collect(project, state)
    if as_json:
        ui.print_json(report.as_json())
        return
    from consort.cli.status_view import render_status

    render_status(report)


@click.command()
@click.argument("gate", type=click.Choice(GATES))
@click.argument("subject")
@click.option("--note", help="Why, for the record.")
@handled
def approve(gate: str, subject: str, note: str | None) -> None:
    """Approve GATE for SUBJECT (e.g. `consort approve design F1`). Binds to the hashes of the
    artifacts it covers: any later change re-opens the gate."""
    from consort.cli import ui
    from consort.core.state import GateKind
    from consort.lanes.gates import approve as run

    event = run(_project(), GateKind(gate), subject, note, _confirm)
    ui.done(
        f"{gate} gate of {event.subject} approved by the {event.actor.value} (event {event.seq})"
    )


@click.command()
@click.argument("gate", type=click.Choice(GATES))
@click.argument("subject")
@click.option(
    "--note", required=True, help="What must change; goes to the role that must change it."
)
@click.option("--artifact", help="Which artifact to send back (default: the one the note names).")
@handled
def reject(gate: str, subject: str, note: str, artifact: str | None) -> None:
    """Reject GATE for SUBJECT with a note; the lane resumes from the artifact it names."""
    from consort.cli import ui
    from consort.core.artifacts.registry import parse_kind
    from consort.core.state import GateKind
    from consort.lanes.gates import reject as run

    kind = parse_kind(artifact) if artifact else None
    event = run(_project(), GateKind(gate), subject, note, kind)
    ui.done(
        f"{gate} gate of {event.subject} rejected: "
        f"{event.data['artifact']} goes back (event {event.seq})"
    )


@click.command()
@click.argument("subject")
@click.option("--note", help="Advice for the next attempt.")
@handled
def retry(subject: str, note: str | None) -> None:
    """Resolve SUBJECT's escalation: its step gets fresh attempts, with your note as feedback."""
    from consort.cli import ui
    from consort.lanes.gates import retry as run

    event = run(_project(), subject, note)
    ui.done(
        f"escalation of {event.subject} resolved; `consort drive` continues (event {event.seq})"
    )


@click.command()
@click.option("--json", "as_json", is_flag=True)
@handled
def verify(as_json: bool) -> None:
    """Re-check the ledger's hash chain, every gate's hashes and the evidence; exit 0 or 4."""
    from consort.cli import ui
    from consort.core.errors import ExitCode
    from consort.lanes.verify import verify as run

    report = run(_project())
    if as_json:
        ui.print_json({"ok": report.ok, "holds": report.holds, "fails": report.fails})
    else:
        for line in report.holds:
            ui.done(line)
        for line in report.fails:
            ui.error(line)
    sys.exit(int(ExitCode.OK if report.ok else ExitCode.INTEGRITY))


@click.command()
@click.argument("subject")
@click.option("--note", required=True, help="Why the test changes; recorded with the change.")
@handled
def amend(subject: str, note: str) -> None:
    """Approve your own change to a cycle's test (e.g. `consort amend F1/S1/T3`): edit the test in
    the story's worktree first. Recorded with each file's before and after hashes."""
    from consort.cli import ui
    from consort.lanes.gates import amend as run

    event = run(_project(), subject, note, _confirm)
    ui.done(f"amendment of {event.subject} recorded (event {event.seq}); `consort drive` continues")
