"""The State: everything the orchestrator knows, as typed records.

`derive` (`core.derive`) builds it purely from the ledger's events and the artifact files;
`consort.core.machine.next_action` reads it. Neither writes anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from consort.core.artifacts.registry import ArtifactKind
from consort.core.config import GateMode
from consort.core.vocabulary import GateKind as GateKind  # noqa: PLC0414 (its old home)
from consort.core.vocabulary import Role, Step


class ArtifactCondition(StrEnum):
    MISSING = "missing"  # never produced (or redone and not yet produced again)
    ACCEPTED = "accepted"  # on disk, identical to what the ledger accepted
    PENDING_COPY = "pending-copy"  # accepted in the ledger, file not yet written (after a crash)
    HAND_EDITED = "hand-edited"  # on disk, valid, changed by a person since it was accepted
    INVALID = "invalid"  # on disk but does not validate: a person must fix it
    NEEDS_REDO = "needs-redo"  # a rejection (or a redone upstream artifact) sent it back


class GateStatus(StrEnum):
    OPEN = "open"
    APPROVED = "approved"
    REJECTED = "rejected"


@dataclass(frozen=True)
class DesignStep:
    step: Step
    role: Role
    artifact: ArtifactKind
    only_user_facing: bool = False


# The design lane, in order. Each role reads the artifacts before its own and writes its own.
DESIGN_STEPS: tuple[DesignStep, ...] = (
    DesignStep(Step.SPEC, Role.SPEC_AUTHOR, ArtifactKind.FEATURE_SPEC),
    DesignStep(Step.ARCHITECTURE, Role.ARCHITECT, ArtifactKind.ARCHITECTURE),
    DesignStep(Step.DB_DESIGN, Role.DBA, ArtifactKind.DB_DESIGN),
    DesignStep(Step.TEST_LIST, Role.TEST_STRATEGIST, ArtifactKind.TEST_LIST),
    DesignStep(Step.UX, Role.UX_DESIGNER, ArtifactKind.UX, only_user_facing=True),
)


def design_steps(user_facing: bool) -> tuple[DesignStep, ...]:
    return tuple(s for s in DESIGN_STEPS if user_facing or not s.only_user_facing)


def step_for_artifact(kind: ArtifactKind) -> DesignStep:
    return next(s for s in DESIGN_STEPS if s.artifact is kind)


@dataclass(frozen=True)
class ArtifactState:
    kind: ArtifactKind
    condition: ArtifactCondition
    path: str
    current_hash: str | None = None
    accepted_hash: str | None = None
    accepted_turn: str | None = None  # the turn folder holding the accepted output
    problem: str | None = None  # why it is invalid
    feedback: str | None = None  # why it must be redone


@dataclass(frozen=True)
class GateState:
    kind: GateKind
    status: GateStatus = GateStatus.OPEN
    approved_hashes: Mapping[str, str] = field(default_factory=dict)  # artifact kind -> sha256
    drifted: tuple[str, ...] = ()  # files whose content changed since the approval
    actor: str | None = None
    seq: int | None = None


@dataclass(frozen=True)
class Escalation:
    step: Step
    reason: str
    seq: int
    story: str | None = None  # for a build-lane escalation: the cycle it concerns
    item: str | None = None


class ItemStage(StrEnum):
    RED = "red"  # the navigator writes the failing test; Consort proves it fails as declared
    GREEN = "green"  # the driver makes it pass; Consort proves the whole suite passes
    REVIEW = "review"  # the navigator reviews the RED..GREEN change
    REFACTOR = "refactor"  # the driver refactors, still green
    DONE = "done"


@dataclass(frozen=True)
class ItemState:
    """One test-list item's cycle within its story."""

    id: str  # "T3"
    title: str
    stage: ItemStage
    failures: int  # failed attempts at the current stage since it began or was retried
    feedback: str | None
    red_commit: str | None = None
    green_commit: str | None = None
    refactor_commit: str | None = None
    red_tests: tuple[str, ...] = ()  # every test collected at RED
    passing: tuple[str, ...] = ()  # the tests passing after the last verified run
    review_reasons: tuple[str, ...] = ()
    experiment: int | None = None  # the number of the cycle's open experiment, if one is open
    experiment_running: bool = False  # ... and some approach of it has not ended
    raced: bool = False  # an experiment was started for this cycle (open or closed)

    @property
    def head(self) -> str | None:
        """The last commit this cycle proved."""
        return self.refactor_commit or self.green_commit or self.red_commit


@dataclass(frozen=True)
class StoryState:
    id: str  # "S1"
    key: str  # "S1-file-stock"
    branch: str
    created: bool
    database: str | None
    worktree: str | None
    base_commit: str | None
    baseline_passing: tuple[str, ...]
    items: tuple[ItemState, ...]
    gate: GateStatus
    gate_actor: str | None
    merged: bool
    # The design's mark (the test list's `experiments`): how many approaches race which cycles.
    approaches: int | None = None
    raced_items: tuple[str, ...] = ()

    @property
    def head(self) -> str | None:
        for item in reversed(self.items):
            if item.head:
                return item.head
        return self.base_commit

    def passing(self) -> tuple[str, ...]:
        for item in reversed(self.items):
            if item.passing:
                return item.passing
        return self.baseline_passing


@dataclass(frozen=True)
class BuildState:
    feature_branch: str
    base_branch: str | None
    created: bool
    database: str | None
    stories: tuple[StoryState, ...]
    deployed: bool = False  # the deploy lane's proof holds for the current feature head
    deploy_gate: GateStatus = GateStatus.OPEN
    promote_gate: GateStatus = GateStatus.OPEN
    promoted: bool = False


@dataclass(frozen=True)
class FeatureState:
    id: str
    title: str
    user_facing: bool
    artifacts: Mapping[ArtifactKind, ArtifactState]
    failures: Mapping[Step, int]  # failed attempts since the step last succeeded or was reset
    feedback: Mapping[Step, str]  # what the last failed attempt of a step should hear
    escalation: Escalation | None
    design_gate: GateState
    build: BuildState | None = None  # once the design is approved

    def steps(self) -> tuple[DesignStep, ...]:
        return design_steps(self.user_facing)


@dataclass(frozen=True)
class State:
    features: tuple[FeatureState, ...]
    gate_mode: GateMode
    max_retries: int  # failed attempts allowed after the first, per step, before escalating
    repair_attempts: int = 3  # failed GREENs the driver may repair before escalating

    def feature(self, ident: str) -> FeatureState | None:
        return next((f for f in self.features if f.id == ident), None)
