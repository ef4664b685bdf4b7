"""Commands of the orchestrator: intake, drive, next, status, and the human's decisions at gates
(approve, reject, retry, amend)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from consort.cli.kit import confirm, handled, project

LANES = ("design", "build", "deploy", "done")
GATES = ("design", "story", "deploy", "promote")


def register(group: click.Group) -> None:
    group.add_command(intake)
    group.add_command(drive)
    group.add_command(next_)
    group.add_command(status)
    group.add_command(approve)
    group.add_command(reject)
    group.add_command(retry)
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
    from consort.app import orchestrate as api
    from consort.cli import ui

    if source is not None:
        text = source.read_text(encoding="utf-8")
    elif not sys.stdin.isatty():
        text = sys.stdin.read()
    else:
        text = click.edit(f"# {kind}: write it here, save and close\n") or ""
    outcome = api.intake(
        project(), api.IntakeKind(kind), text, title=title, user_facing=user_facing
    )
    if outcome.feature:
        ui.done(f"recorded feature {outcome.feature} ({outcome.path})")
        ui.say(f"next: `{outcome.next_command}`")
    else:
        ui.done(f"recorded the {kind} ({outcome.path})")


@click.command()
@click.option("--feature", help="Only this feature (F1 or its full name).")
@click.option("--until", type=click.Choice(LANES), help="Stop once this lane is done.")
@click.option("--max-steps", type=click.IntRange(min=1), help="Stop after this many steps.")
@handled
def drive(feature: str | None, until: str | None, max_steps: int | None) -> None:
    """Run the loop: derive the state, do the next action, record it; until a gate, an
    escalation, the end, or a bound. Safe to interrupt (Ctrl-C) and to re-run."""
    from consort.app import orchestrate as api
    from consort.cli import ui
    from consort.cli.drive_view import show_drive_outcome

    outcome = api.drive(
        project(),
        feature=feature,
        until=api.Lane(until) if until else None,
        max_steps=max_steps,
        progress=ui.step,
    )
    show_drive_outcome(outcome)
    sys.exit(int(outcome.code))


@click.command("next")
@click.option("--feature", help="Only this feature.")
@click.option("--json", "as_json", is_flag=True)
@handled
def next_(feature: str | None, as_json: bool) -> None:
    """Show the next action and why (changes nothing)."""
    from consort.app.next_step import next_action
    from consort.cli import ui

    action = next_action(project(), feature)
    if as_json:
        ui.print_json(action.as_json())
        return
    ui.say(f"[bold]{action.summary}[/bold]  ({action.lane} lane)")
    ui.say(f"why: {action.reason}")
    if action.command:
        ui.say(f"run: {action.command}")


@click.command()
@click.option("--json", "as_json", is_flag=True)
@handled
def status(as_json: bool) -> None:
    """Features, their artifacts and gates, escalations, and branches."""
    from consort.app.status import status as collect
    from consort.cli import ui

    report = collect(project())
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
    from consort.app import orchestrate as api
    from consort.cli import ui

    outcome = api.approve(project(), api.GateKind(gate), subject, note, confirm)
    ui.done(
        f"{gate} gate of {outcome.subject} approved by the {outcome.actor} (event {outcome.seq})"
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
    from consort.app import orchestrate as api
    from consort.cli import ui

    outcome = api.reject(project(), api.GateKind(gate), subject, note, artifact)
    ui.done(
        f"{gate} gate of {outcome.subject} rejected: "
        f"{outcome.artifact} goes back (event {outcome.seq})"
    )


@click.command()
@click.argument("subject")
@click.option("--note", help="Advice for the next attempt.")
@handled
def retry(subject: str, note: str | None) -> None:
    """Resolve SUBJECT's escalation: its step gets fresh attempts, with your note as feedback."""
    from consort.app import orchestrate as api
    from consort.cli import ui

    outcome = api.retry(project(), subject, note)
    ui.done(
        f"escalation of {outcome.subject} resolved; `consort drive` continues (event {outcome.seq})"
    )


@click.command()
@click.argument("subject")
@click.option("--note", required=True, help="Why the test changes; recorded with the change.")
@handled
def amend(subject: str, note: str) -> None:
    """Approve your own change to a cycle's test (e.g. `consort amend F1/S1/T3`): edit the test in
    the story's worktree first. Recorded with each file's before and after hashes."""
    from consort.app import orchestrate as api
    from consort.cli import ui

    outcome = api.amend(project(), subject, note, confirm)
    ui.done(
        f"amendment of {outcome.subject} recorded (event {outcome.seq}); `consort drive` continues"
    )
