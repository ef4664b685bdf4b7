"""How the end of `consort drive` reads: done, at a gate, an escalation, an interrupt, an error.

An escalation and an interrupt are stops, not errors: the first waits for a person (exit 3),
the second was asked for (exit 130) and the next `consort drive` resumes where it stopped.
"""

from __future__ import annotations

from consort.app.errors import ExitCode
from consort.app.orchestrate import DriveOutcome
from consort.cli import ui


def show_drive_outcome(outcome: DriveOutcome) -> None:
    steps = f"{outcome.steps} step(s)"
    if outcome.code is ExitCode.OK:
        ui.done(f"{steps}; {outcome.message}")
        if outcome.next_command:
            ui.say(f"{'approve with' if outcome.at_gate else 'next'}: {outcome.next_command}")
    elif outcome.code is ExitCode.ESCALATION:
        then = [f"why: {outcome.message}"]
        if outcome.next_command:
            then.append(f"resolve: {outcome.next_command}")
        then.append("every way to resolve it: `consort status`")
        ui.stopped(f"an escalation waits for a person ({steps} done)", then)
    elif outcome.code is ExitCode.INTERRUPTED:
        ui.stopped(outcome.message, ["resume: consort drive"])
    else:
        ui.error(f"{steps}; {outcome.message}")
        if outcome.next_command:
            ui.say(f"next: {outcome.next_command}")
