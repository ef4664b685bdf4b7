"""Derive the State purely from the ledger's events and the artifact files on disk.

Events are the source of truth for what happened (turns, acceptances, gates, escalations); files
are checked against them (hashes), so a crash between a ledger append and a file write, a hand
edit and a drifted approval are all told apart here, without writing anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from consort.agents.task import Step
from consort.artifacts.registry import ArtifactKind, default_filename
from consort.config import Config
from consort.ledger import Event, EventType
from consort.state import (
    DESIGN_STEPS,
    ArtifactCondition,
    ArtifactState,
    Escalation,
    FeatureState,
    GateKind,
    GateState,
    GateStatus,
    State,
    step_for_artifact,
)

FEATURES_DIR = "features"


class ArtifactFiles(Protocol):
    """How derivation sees artifact files: their canonical hash and validity."""

    def read(self, kind: ArtifactKind, path: Path) -> tuple[str | None, list[str]]:
        """(canonical hash or None when missing/unreadable, validation problems)."""
        ...

    def exists(self, path: Path) -> bool: ...


class DiskArtifacts:
    def read(self, kind: ArtifactKind, path: Path) -> tuple[str | None, list[str]]:
        from consort.artifacts.canonical import artifact_hash
        from consort.artifacts.registry import validation_errors

        if not path.exists():
            return None, ["file not found"]
        problems = validation_errors(kind, path)
        try:
            return artifact_hash(path), problems
        except Exception as exc:  # not JSON at all: no hash, the problem says why
            return None, problems or [str(exc)]

    def exists(self, path: Path) -> bool:
        return path.exists()


def feature_dir(state_dir: Path, feature: str) -> Path:
    return state_dir / FEATURES_DIR / feature


def artifact_path(state_dir: Path, feature: str, kind: ArtifactKind) -> Path:
    return feature_dir(state_dir, feature) / default_filename(kind)


def turn_output(state_dir: Path, turn: str, kind: ArtifactKind) -> Path:
    return state_dir / "turns" / turn / "outputs" / default_filename(kind)


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


def _kind(data: Mapping[str, Any], key: str = "kind") -> ArtifactKind | None:
    try:
        return ArtifactKind(str(data.get(key)))
    except ValueError:
        return None


def _step(data: Mapping[str, Any]) -> Step | None:
    try:
        return Step(str(data.get("step")))
    except ValueError:
        return None


def _fold(tally: _Tally, event: Event) -> None:
    data = event.data
    kind = event.type
    if kind is EventType.FEATURE_CREATED:
        tally.title = str(data.get("title", ""))
        tally.user_facing = bool(data.get("user_facing", False))
    elif kind is EventType.TURN_FAILED:
        step = _step(data)
        if step is not None:
            tally.failures[step] = tally.failures.get(step, 0) + 1
            tally.feedback[step] = str(data.get("feedback", ""))
    elif kind is EventType.ARTIFACT_ACCEPTED:
        artifact = _kind(data)
        if artifact is not None:
            digest = str(data["hash"])
            tally.accepted[artifact] = (digest, data.get("turn"))
            tally.history.setdefault(artifact, set()).add(digest)
            tally.redo.pop(artifact, None)
            if artifact in {s.artifact for s in DESIGN_STEPS}:
                step = step_for_artifact(artifact).step
                tally.failures.pop(step, None)
                tally.feedback.pop(step, None)
    elif kind is EventType.ESCALATION_RAISED:
        step = _step(data)
        if step is not None:
            tally.escalation = Escalation(step, str(data.get("reason", "")), event.seq)
    elif kind is EventType.ESCALATION_RESOLVED:
        step = _step(data)
        tally.escalation = None
        if step is not None:
            tally.failures.pop(step, None)
            note = data.get("note")
            if note:
                tally.feedback[step] = f"The product owner says: {note}"
    elif kind is EventType.GATE_APPROVED and data.get("gate") == GateKind.DESIGN.value:
        tally.gate = GateState(
            GateKind.DESIGN,
            GateStatus.APPROVED,
            approved_hashes=dict(data.get("hashes", {})),
            actor=event.actor.value,
            seq=event.seq,
        )
    elif kind is EventType.GATE_REJECTED and data.get("gate") == GateKind.DESIGN.value:
        tally.gate = GateState(GateKind.DESIGN, GateStatus.REJECTED, actor=event.actor.value, seq=event.seq)
        target = _kind(data, "artifact") or ArtifactKind.FEATURE_SPEC
        note = str(data.get("note", ""))
        order = [s.artifact for s in DESIGN_STEPS]
        if target in order:
            for later in order[order.index(target) :]:
                tally.redo[later] = (
                    f"the product owner rejected it: {note}"
                    if later is target
                    else f"{target.value} is being revised ({note}); align with the new version"
                )


def derive(
    events: Iterable[Event],
    config: Config,
    state_dir: Path,
    files: ArtifactFiles | None = None,
) -> State:
    files = files or DiskArtifacts()
    tallies: dict[str, _Tally] = {}
    for event in events:
        feature = event.subject.split("/", 1)[0]
        if event.type is EventType.FEATURE_CREATED:
            tallies[feature] = _Tally()
        tally = tallies.get(feature)
        if tally is not None:
            _fold(tally, event)
    features = tuple(
        _feature_state(key, tally, state_dir, files) for key, tally in tallies.items()
    )
    return State(features=features, gate_mode=config.gates.mode, max_retries=config.turns.retries)


def _feature_state(key: str, tally: _Tally, state_dir: Path, files: ArtifactFiles) -> FeatureState:
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
    return FeatureState(
        id=key,
        title=tally.title,
        user_facing=tally.user_facing,
        artifacts=artifacts,
        failures=dict(tally.failures),
        feedback=dict(tally.feedback),
        escalation=tally.escalation,
        design_gate=gate,
    )


def _artifact_state(
    key: str, kind: ArtifactKind, tally: _Tally, state_dir: Path, files: ArtifactFiles
) -> ArtifactState:
    path = artifact_path(state_dir, key, kind)
    shown = str(path.relative_to(state_dir.parent))
    accepted = tally.accepted.get(kind)
    accepted_hash, accepted_turn = accepted if accepted else (None, None)
    if kind in tally.redo:
        return ArtifactState(
            kind, ArtifactCondition.NEEDS_REDO, shown, None, accepted_hash, accepted_turn,
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
