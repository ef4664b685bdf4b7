"""Where each gate stands, read from the State: not reached yet, open (waiting for a decision),
approved, rejected (its work being redone), or approved and drifted (open again).

`consort status` shows these, and the gate commands (`approve`, `reject`) act only on an open
gate: anything else is refused with the phase it is in and what can be done instead.
"""

from __future__ import annotations

from enum import StrEnum

from consort.core.state import (
    ArtifactCondition,
    BuildState,
    FeatureState,
    GateStatus,
    ItemStage,
    StoryState,
)


class GatePhase(StrEnum):
    NOT_REACHED = "not reached"  # the work it decides on is not finished
    OPEN = "open"  # waiting for the product owner (or the proxy policy)
    APPROVED = "approved"
    REJECTED = "rejected"  # sent back; open again once the work is redone
    DRIFTED = "approved (drifted)"  # an approved artifact changed since: open again

    @property
    def is_open(self) -> bool:
        return self in (GatePhase.OPEN, GatePhase.DRIFTED)


def design_problems(feature: FeatureState) -> list[str]:
    """Why the design of `feature` cannot be decided on yet (empty when it can)."""
    problems = []
    for step in feature.steps():
        artifact = feature.artifacts[step.artifact]
        if artifact.condition not in (ArtifactCondition.ACCEPTED, ArtifactCondition.HAND_EDITED):
            problems.append(f"{artifact.path}: {artifact.condition.value}")
    return problems


def design_phase(feature: FeatureState) -> GatePhase:
    gate = feature.design_gate
    if gate.status is GateStatus.APPROVED:
        return GatePhase.DRIFTED if gate.drifted else GatePhase.APPROVED
    if design_problems(feature):
        return GatePhase.REJECTED if gate.status is GateStatus.REJECTED else GatePhase.NOT_REACHED
    return GatePhase.OPEN


def story_phase(story: StoryState) -> GatePhase:
    if story.merged or story.gate is GateStatus.APPROVED:
        return GatePhase.APPROVED
    if story.gate is GateStatus.REJECTED:
        return GatePhase.REJECTED
    if story.created and all(i.stage is ItemStage.DONE for i in story.items):
        return GatePhase.OPEN
    return GatePhase.NOT_REACHED


def deploy_phase(build: BuildState | None) -> GatePhase:
    if build is None:
        return GatePhase.NOT_REACHED
    if build.deploy_gate is GateStatus.APPROVED:
        return GatePhase.APPROVED
    return GatePhase.OPEN if build.deployed else GatePhase.NOT_REACHED


def promote_phase(build: BuildState | None) -> GatePhase:
    if build is None:
        return GatePhase.NOT_REACHED
    if build.promote_gate is GateStatus.APPROVED:
        return GatePhase.APPROVED
    return GatePhase.OPEN if build.deploy_gate is GateStatus.APPROVED else GatePhase.NOT_REACHED
