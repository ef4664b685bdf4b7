"""The orchestrator's commands: intake, drive, next, and the human's decisions at gates
(approve, reject, retry, amend).

The lanes are imported inside the functions: `consort next` needs none of them and starts fast.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consort.app.next_step import NextReport, next_action
from consort.core.errors import ConsortError, ExitCode
from consort.core.project import Project
from consort.core.state import GateKind
from consort.core.vocabulary import ActionKind, Lane
from consort.lanes.intake import IntakeKind

if TYPE_CHECKING:
    from consort.core.ledger import Event

__all__ = [
    "ActionKind",
    "DecisionOutcome",
    "DriveOutcome",
    "GateKind",
    "IntakeKind",
    "IntakeOutcome",
    "Lane",
    "NextReport",
    "amend",
    "approve",
    "drive",
    "intake",
    "next_action",
    "reject",
    "retry",
]

Confirm = Callable[[str], bool]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class IntakeOutcome:
    kind: str
    path: Path
    feature: str | None

    @property
    def next_command(self) -> str | None:
        """What to run next for a recorded feature."""
        if self.feature is None:
            return None
        return f"consort drive --feature {self.feature.split('-', 1)[0]}"

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": str(self.path), "feature": self.feature}


def intake(
    project: Project,
    kind: IntakeKind,
    text: str,
    *,
    title: str | None = None,
    user_facing: bool = False,
) -> IntakeOutcome:
    """Record the product owner's words: the product overview, the NFRs, or a feature request."""
    from consort.lanes.intake import record

    result = record(project, kind, text, title=title, user_facing=user_facing)
    return IntakeOutcome(result.kind.value, result.path, result.feature)


@dataclass(frozen=True)
class DriveOutcome:
    code: ExitCode
    steps: int
    message: str
    next_command: str | None  # what the human runs next, when the loop stopped for one
    at_gate: bool  # the loop stopped at a gate: `next_command` approves it

    def as_json(self) -> dict[str, Any]:
        return {
            "code": int(self.code),
            "steps": self.steps,
            "message": self.message,
            "next_command": self.next_command,
            "at_gate": self.at_gate,
        }


def drive(
    project: Project,
    *,
    feature: str | None = None,
    until: Lane | None = None,
    max_steps: int | None = None,
    progress: Progress = lambda _line: None,
) -> DriveOutcome:
    """Run the loop until a gate, an escalation, the end, or a bound."""
    from consort.lanes.loop import drive as run

    try:
        result = run(project, feature=feature, until=until, max_steps=max_steps, progress=progress)
    except ConsortError:
        keep_answers(project)  # what stopped it is what a person asks `status` next
        raise
    keep_answers(project)
    last = result.last
    return DriveOutcome(
        code=result.code,
        steps=result.steps,
        message=result.message,
        next_command=last.command if last is not None else None,
        at_gate=last is not None and last.kind is ActionKind.AWAIT_GATE,
    )


def keep_answers(project: Project) -> None:
    """Derive what `consort status` and `consort next` answer for the files as a drive left
    them, and keep it (`consort.core.derived_cache`, `consort.adapters.branch_rows`): what a
    person asks after a drive is then answered without loading the models, the ledger or the
    server, from answers derived exactly as those commands derive them. Keeping them only
    saves time: whatever stops it (a damaged file, the server gone) leaves the commands to
    derive their answers, and to say what is wrong, and never changes the drive's outcome."""
    from consort.app.status import keep_answer

    with contextlib.suppress(Exception):
        keep_answer(project)
        next_action(project)


@dataclass(frozen=True)
class DecisionOutcome:
    """A decision the human made, as the ledger recorded it."""

    seq: int
    type: str
    actor: str
    subject: str
    artifact: str | None = None  # for a rejection: the artifact that goes back

    @classmethod
    def of(cls, event: Event) -> DecisionOutcome:
        from consort.core.ledger.events import GateRejected

        payload = event.payload
        artifact = payload.artifact if isinstance(payload, GateRejected) else None
        return cls(
            seq=event.seq,
            type=event.type.value,
            actor=event.actor.value,
            subject=event.subject,
            artifact=artifact.value if artifact is not None else None,
        )

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def approve(
    project: Project, gate: GateKind, subject: str, note: str | None, confirm: Confirm
) -> DecisionOutcome:
    """Approve a gate; binds to the hashes of the artifacts it covers."""
    from consort.lanes.gates import approve as run

    return DecisionOutcome.of(run(project, gate, subject, note, confirm))


def reject(
    project: Project, gate: GateKind, subject: str, note: str, artifact: str | None = None
) -> DecisionOutcome:
    """Reject a gate with a note; `artifact` names what goes back (default: what the note names)."""
    from consort.core.artifacts.registry import parse_kind
    from consort.lanes.gates import reject as run

    kind = parse_kind(artifact) if artifact else None
    return DecisionOutcome.of(run(project, gate, subject, note, kind))


def retry(project: Project, subject: str, note: str | None) -> DecisionOutcome:
    """Resolve an escalation: the step gets fresh attempts, with the note as feedback."""
    from consort.lanes.gates import retry as run

    return DecisionOutcome.of(run(project, subject, note))


def amend(project: Project, subject: str, note: str, confirm: Confirm) -> DecisionOutcome:
    """Approve the human's own change to a cycle's test."""
    from consort.lanes.gates import amend as run

    return DecisionOutcome.of(run(project, subject, note, confirm))
