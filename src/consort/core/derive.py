"""Derive the State purely from the ledger's events and the artifact files on disk.

Events are the source of truth for what happened (turns, acceptances, gates, escalations); files
are checked against them (hashes), so a crash between a ledger append and a file write, a hand
edit and a drifted approval are all told apart here, without writing anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from consort.core.artifacts._base import ArtifactModel
from consort.core.artifacts.registry import ArtifactKind, default_filename
from consort.core.config import Config
from consort.core.layout import Layout
from consort.core.ledger import Event, EventType
from consort.core.ledger.events import (
    ArtifactAccepted,
    EscalationRaised,
    EscalationResolved,
    FeatureCreated,
    GateApproved,
    GateRejected,
    TurnFailed,
)
from consort.core.state import (
    DESIGN_STEPS,
    ArtifactCondition,
    ArtifactState,
    BuildState,
    Escalation,
    FeatureState,
    GateKind,
    GateState,
    GateStatus,
    State,
    step_for_artifact,
)
from consort.core.vocabulary import Step


class ArtifactFiles(Protocol):
    """How derivation sees artifact files: their canonical hash and validity."""

    def read(self, kind: ArtifactKind, path: Path) -> tuple[str | None, list[str]]:
        """(canonical hash or None when missing/unreadable, validation problems)."""
        ...

    def exists(self, path: Path) -> bool: ...

    def load(self, kind: ArtifactKind, path: Path) -> ArtifactModel | None:
        """The parsed artifact, or None when it is missing or invalid."""
        ...


class DiskArtifacts:
    def read(self, kind: ArtifactKind, path: Path) -> tuple[str | None, list[str]]:
        from consort.core.artifacts.canonical import artifact_hash
        from consort.core.artifacts.registry import validation_errors

        if not path.exists():
            return None, ["file not found"]
        problems = validation_errors(kind, path)
        try:
            return artifact_hash(path), problems
        except Exception as exc:  # not JSON at all: no hash, the problem says why
            return None, problems or [str(exc)]

    def exists(self, path: Path) -> bool:
        return path.exists()

    def load(self, kind: ArtifactKind, path: Path) -> ArtifactModel | None:
        from consort.core.artifacts.registry import InvalidArtifact, load_artifact

        try:
            return load_artifact(kind, path)
        except InvalidArtifact:
            return None


def artifact_path(state_dir: Path, feature: str, kind: ArtifactKind) -> Path:
    return Layout(state_dir).feature(feature) / default_filename(kind)


def turn_output(state_dir: Path, turn: str, kind: ArtifactKind) -> Path:
    return Layout(state_dir).turn_output(turn, default_filename(kind))


@dataclass
class _Tally:
    """What the events of one feature add up to (mutable while folding, frozen afterwards)."""

    title: str = ""
    user_facing: bool = False
    accepted: dict[ArtifactKind, tuple[str, str | None]] = field(default_factory=dict)
    history: dict[ArtifactKind, set[str]] = field(default_factory=dict)
    failures: dict[Step, int] = field(default_factory=dict)
    feedback: dict[Step, str] = field(default_factory=dict)
    redo: dict[ArtifactKind, str] = field(default_factory=dict)
    escalation: Escalation | None = None
    gate: GateState = field(default_factory=lambda: GateState(GateKind.DESIGN))


def _on_feature_created(tally: _Tally, event: Event) -> None:
    created = FeatureCreated.of(event)
    tally.title = created.title
    tally.user_facing = created.user_facing


def _on_turn_failed(tally: _Tally, event: Event) -> None:
    failed = TurnFailed.of(event)
    if failed.step is not None:
        tally.failures[failed.step] = tally.failures.get(failed.step, 0) + 1
        tally.feedback[failed.step] = failed.feedback


def _on_artifact_accepted(tally: _Tally, event: Event) -> None:
    accepted = ArtifactAccepted.of(event)
    artifact = accepted.kind
    if artifact is None:
        return
    digest = str(accepted.hash)
    tally.accepted[artifact] = (digest, accepted.turn)
    tally.history.setdefault(artifact, set()).add(digest)
    tally.redo.pop(artifact, None)
    if artifact in {s.artifact for s in DESIGN_STEPS}:
        step = step_for_artifact(artifact).step
        tally.failures.pop(step, None)
        tally.feedback.pop(step, None)


def _on_escalation_raised(tally: _Tally, event: Event) -> None:
    raised = EscalationRaised.of(event)
    if raised.step is not None:
        tally.escalation = Escalation(
            raised.step, raised.reason, event.seq, story=raised.story, item=raised.item
        )


def _on_escalation_resolved(tally: _Tally, event: Event) -> None:
    resolved = EscalationResolved.of(event)
    tally.escalation = None
    if resolved.step is not None:
        tally.failures.pop(resolved.step, None)
        if resolved.note:
            tally.feedback[resolved.step] = f"The product owner says: {resolved.note}"


def _on_gate_approved(tally: _Tally, event: Event) -> None:
    approved = GateApproved.of(event)
    if approved.gate is not GateKind.DESIGN:
        return
    tally.gate = GateState(
        GateKind.DESIGN,
        GateStatus.APPROVED,
        approved_hashes=dict(approved.hashes),
        actor=event.actor.value,
        seq=event.seq,
    )


def _on_gate_rejected(tally: _Tally, event: Event) -> None:
    """A rejection sends its artifact, and every artifact built on it, back for a redo."""
    rejected = GateRejected.of(event)
    if rejected.gate is not GateKind.DESIGN:
        return
    tally.gate = GateState(
        GateKind.DESIGN, GateStatus.REJECTED, actor=event.actor.value, seq=event.seq
    )
    target = rejected.artifact or ArtifactKind.FEATURE_SPEC
    note = rejected.note
    order = [s.artifact for s in DESIGN_STEPS]
    if target not in order:
        return
    for later in order[order.index(target) :]:
        tally.redo[later] = (
            f"the product owner rejected it: {note}"
            if later is target
            else f"{target.value} is being revised ({note}); align with the new version"
        )


_FOLDS: dict[EventType, Callable[[_Tally, Event], None]] = {
    EventType.FEATURE_CREATED: _on_feature_created,
    EventType.TURN_FAILED: _on_turn_failed,
    EventType.ARTIFACT_ACCEPTED: _on_artifact_accepted,
    EventType.ESCALATION_RAISED: _on_escalation_raised,
    EventType.ESCALATION_RESOLVED: _on_escalation_resolved,
    EventType.GATE_APPROVED: _on_gate_approved,
    EventType.GATE_REJECTED: _on_gate_rejected,
}


def _fold(tally: _Tally, event: Event) -> None:
    handler = _FOLDS.get(event.type)
    if handler is not None:
        handler(tally, event)


def derive(
    events: Iterable[Event],
    config: Config,
    state_dir: Path,
    files: ArtifactFiles | None = None,
) -> State:
    files = files or DiskArtifacts()
    tallies: dict[str, _Tally] = {}
    by_feature: dict[str, list[Event]] = {}
    for event in events:
        feature = event.subject.split("/", 1)[0]
        if event.type is EventType.FEATURE_CREATED:
            tallies[feature] = _Tally()
            by_feature[feature] = []
        tally = tallies.get(feature)
        if tally is not None:
            by_feature[feature].append(event)
            if "/" not in event.subject:  # story and cycle events belong to the build lane
                _fold(tally, event)
    features = tuple(
        _feature_state(key, tally, by_feature[key], state_dir, files)
        for key, tally in tallies.items()
    )
    return State(
        features=features,
        gate_mode=config.gates.mode,
        max_retries=config.turns.retries,
        repair_attempts=config.build.repair_attempts,
    )


def _feature_state(
    key: str, tally: _Tally, events: list[Event], state_dir: Path, files: ArtifactFiles
) -> FeatureState:
    artifacts: dict[ArtifactKind, ArtifactState] = {}
    for step in DESIGN_STEPS:
        artifacts[step.artifact] = _artifact_state(key, step.artifact, tally, state_dir, files)
    gate = tally.gate
    if gate.status is GateStatus.APPROVED:
        drifted = []
        for name, approved in sorted(gate.approved_hashes.items()):
            path = artifact_path(state_dir, key, ArtifactKind(name))
            current, _ = files.read(ArtifactKind(name), path)
            if current != approved:
                drifted.append(str(path.relative_to(state_dir.parent)))
        gate = GateState(
            gate.kind, gate.status, gate.approved_hashes, tuple(drifted), gate.actor, gate.seq
        )
    build = None
    if gate.status is GateStatus.APPROVED and not gate.drifted:
        build = _build_state(key, events, state_dir, files)
    return FeatureState(
        id=key,
        title=tally.title,
        user_facing=tally.user_facing,
        artifacts=artifacts,
        failures=dict(tally.failures),
        feedback=dict(tally.feedback),
        escalation=tally.escalation,
        design_gate=gate,
        build=build,
    )


def _build_state(
    key: str, events: list[Event], state_dir: Path, files: ArtifactFiles
) -> BuildState | None:
    from consort.core.artifacts.spec import FeatureSpec
    from consort.core.artifacts.test_list import TestList
    from consort.core.derive_build import derive_build

    spec = files.load(
        ArtifactKind.FEATURE_SPEC, artifact_path(state_dir, key, ArtifactKind.FEATURE_SPEC)
    )
    tests = files.load(
        ArtifactKind.TEST_LIST, artifact_path(state_dir, key, ArtifactKind.TEST_LIST)
    )
    if not isinstance(spec, FeatureSpec) or not isinstance(tests, TestList):
        return None
    return derive_build(key, events, spec, tests)


def _artifact_state(
    key: str, kind: ArtifactKind, tally: _Tally, state_dir: Path, files: ArtifactFiles
) -> ArtifactState:
    path = artifact_path(state_dir, key, kind)
    shown = str(path.relative_to(state_dir.parent))
    accepted = tally.accepted.get(kind)
    accepted_hash, accepted_turn = accepted if accepted else (None, None)
    if kind in tally.redo:
        return ArtifactState(
            kind,
            ArtifactCondition.NEEDS_REDO,
            shown,
            None,
            accepted_hash,
            accepted_turn,
            feedback=tally.redo[kind],
        )
    current, problems = files.read(kind, path)
    present = files.exists(path)
    if accepted_hash is not None:
        if current == accepted_hash and not problems:
            condition = ArtifactCondition.ACCEPTED
        elif not present or current in tally.history.get(kind, set()):
            # Accepted in the ledger, not (yet) on disk: a crash came between the two writes.
            has_output = accepted_turn is not None and files.exists(
                turn_output(state_dir, accepted_turn, kind)
            )
            condition = ArtifactCondition.PENDING_COPY if has_output else ArtifactCondition.MISSING
        elif problems:
            condition = ArtifactCondition.INVALID
        else:
            condition = ArtifactCondition.HAND_EDITED
    elif not present:
        condition = ArtifactCondition.MISSING
    elif problems:
        condition = ArtifactCondition.INVALID
    else:
        condition = ArtifactCondition.HAND_EDITED
    return ArtifactState(
        kind,
        condition,
        shown,
        current,
        accepted_hash,
        accepted_turn,
        problem="; ".join(problems) if problems and present else None,
    )
