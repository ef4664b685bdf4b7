"""Derive the build lane's state of one feature from its ledger events (pure).

Subjects name where an event belongs: "F1-x" (the feature), "F1-x/S1-y" (a story) and
"F1-x/S1-y/T3" (one cycle). Stories are built in the spec's order, and within a story the
test-list items in the list's order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from consort.core.artifacts.spec import FeatureSpec
from consort.core.artifacts.test_list import TestList
from consort.core.ledger import Event, EventType
from consort.core.ledger.events import (
    AmendmentApproved,
    ApproachEnded,
    BranchCreated,
    DeployVerified,
    EscalationRaised,
    EscalationResolved,
    EventPayload,
    ExperimentDiscarded,
    ExperimentSelected,
    ExperimentStarted,
    FeaturePromoted,
    GateApproved,
    GateRejected,
    GreenVerified,
    RedVerified,
    RefactorVerified,
    ReviewRecorded,
    RunRecord,
    StepFailed,
    StoryMerged,
    TurnFailed,
)
from consort.core.state import BuildState, GateStatus, ItemStage, ItemState, StoryState
from consort.core.vocabulary import GateKind, Verdict

FEATURE_BRANCH_PREFIX = "feature/"
STORY_BRANCH_PREFIX = "story/"


def feature_branch(feature: str) -> str:
    return f"{FEATURE_BRANCH_PREFIX}{feature}"


def story_branch(feature: str, story_key: str) -> str:
    return f"{STORY_BRANCH_PREFIX}{feature}/{story_key}"


@dataclass
class _Item:
    stage: ItemStage = ItemStage.RED
    failures: int = 0
    feedback: str | None = None
    red_commit: str | None = None
    green_commit: str | None = None
    refactor_commit: str | None = None
    red_tests: tuple[str, ...] = ()
    passing: tuple[str, ...] = ()
    review_reasons: tuple[str, ...] = ()
    experiment: int | None = None
    unended: set[str] = field(default_factory=set)  # the open experiment's approaches not ended
    raced: bool = False

    def advance(self, stage: ItemStage) -> None:
        self.stage = stage
        self.failures = 0
        self.feedback = None

    def fail(self, feedback: str) -> None:
        self.failures += 1
        self.feedback = feedback


@dataclass
class _Story:
    created: bool = False
    database: str | None = None
    worktree: str | None = None
    base_commit: str | None = None
    baseline: tuple[str, ...] = ()
    gate: GateStatus = GateStatus.OPEN
    gate_actor: str | None = None
    merged: bool = False
    items: dict[str, _Item] = field(default_factory=dict)


def _passing(run: RunRecord | None) -> tuple[str, ...]:
    return tuple(run.passing) if run is not None else ()


def _tests(run: RunRecord | None) -> tuple[str, ...]:
    return tuple(run.tests) if run is not None else ()


def derive_build(
    feature: str, events: Iterable[Event], spec: FeatureSpec, test_list: TestList
) -> BuildState:
    created = False
    lanes: dict[str, bool] = {}
    database: str | None = None
    base_branch: str | None = None
    stories: dict[str, _Story] = {s.key: _Story() for s in spec.stories}
    for event in events:
        parts = event.subject.split("/")
        payload = event.payload
        if isinstance(payload, BranchCreated) and len(parts) == 1:
            created = True
            database = payload.database
            base_branch = payload.base
            continue
        if len(parts) == 1 and event.type in _LANE_EVENTS:
            lanes[_lane_flag(payload)] = True
            continue
        if (
            len(parts) == 1
            and isinstance(payload, EscalationRaised | EscalationResolved)
            and payload.story
            and payload.item
        ):
            # Escalations are the feature's (they stop it), but name the cycle they concern.
            parts = [parts[0], payload.story, payload.item]
        if len(parts) < 2 or parts[1] not in stories:
            continue
        story = stories[parts[1]]
        if len(parts) == 2:
            _fold_story(story, event.actor.value, payload)
            continue
        item = story.items.setdefault(parts[2], _Item())
        _fold_item(item, payload)
    return BuildState(
        feature_branch=feature_branch(feature),
        base_branch=base_branch,
        created=created,
        database=database,
        stories=tuple(
            _story_state(feature, s.key, s.id, stories[s.key], test_list) for s in spec.stories
        ),
        deployed=lanes.get("deployed", False),
        deploy_gate=GateStatus.APPROVED if lanes.get("deploy-gate") else GateStatus.OPEN,
        promote_gate=GateStatus.APPROVED if lanes.get("promote-gate") else GateStatus.OPEN,
        promoted=lanes.get("promoted", False),
    )


# Feature-level events of the deploy and promote lanes set a flag each.
_LANE_EVENTS = frozenset(
    {EventType.DEPLOY_VERIFIED, EventType.GATE_APPROVED, EventType.FEATURE_PROMOTED}
)


def _lane_flag(payload: EventPayload) -> str:
    match payload:
        case DeployVerified():
            return "deployed"
        case GateApproved(gate=gate):
            return f"{gate.value if gate else None}-gate"
        case FeaturePromoted():
            return "promoted"
    raise TypeError(f"not a lane event: {payload.event_type.value}")


def _fold_story(story: _Story, actor: str, payload: EventPayload) -> None:
    match payload:
        case BranchCreated():
            story.created = True
            story.database = payload.database
            story.worktree = payload.worktree
            story.base_commit = payload.base_commit
            story.baseline = _passing(payload.run)
        case GateApproved(gate=GateKind.STORY):
            story.gate = GateStatus.APPROVED
            story.gate_actor = actor
        case GateRejected(gate=GateKind.STORY):
            story.gate = GateStatus.REJECTED
            story.gate_actor = actor
        case StoryMerged():
            story.merged = True


def _fold_item(item: _Item, payload: EventPayload) -> None:
    match payload:
        case RedVerified():
            item.red_commit = payload.commit
            item.red_tests = _tests(payload.run)
            item.passing = _passing(payload.run)
            item.advance(ItemStage.GREEN)
        case AmendmentApproved():
            # The product owner changed the test: GREEN now starts from (and must keep) it.
            item.red_commit = payload.commit
            item.failures = 0
            item.feedback = f"The product owner amended the test: {payload.note}"
        case GreenVerified():
            item.green_commit = payload.commit
            item.passing = _passing(payload.run)
            item.advance(ItemStage.REVIEW)
        case ReviewRecorded():
            item.review_reasons = tuple(payload.reasons)
            refactor = payload.verdict is Verdict.REFACTOR
            item.advance(ItemStage.REFACTOR if refactor else ItemStage.DONE)
            if refactor:
                item.feedback = "The review asks you to refactor: " + "; ".join(item.review_reasons)
        case RefactorVerified():
            item.refactor_commit = payload.commit
            item.passing = _passing(payload.run) or item.passing
            item.advance(ItemStage.DONE)
        # A failed attempt at the item's current stage (TurnFailed: a review whose verdict did
        # not validate; RED/GREEN/REFACTOR failures carry the runner's reasons).
        case StepFailed() | TurnFailed():
            item.fail(payload.feedback)
        # An open experiment holds the cycle's GREEN until a person selects or discards it.
        case ExperimentStarted():
            item.experiment = payload.number
            item.unended = {a.name for a in payload.approaches}
            item.raced = True
        case ApproachEnded() if payload.number == item.experiment:
            item.unended.discard(payload.approach)
        case ExperimentSelected() | ExperimentDiscarded():
            item.experiment = None
            item.unended = set()
        case EscalationResolved():
            item.failures = 0
            if payload.note:
                item.feedback = f"The product owner says: {payload.note}"


def _story_state(
    feature: str, key: str, story_id: str, story: _Story, test_list: TestList
) -> StoryState:
    items = []
    for entry in test_list.items:
        if entry.story != story_id:
            continue
        tally = story.items.get(entry.id, _Item())
        items.append(
            ItemState(
                id=entry.id,
                title=entry.title,
                stage=tally.stage,
                failures=tally.failures,
                feedback=tally.feedback,
                red_commit=tally.red_commit,
                green_commit=tally.green_commit,
                refactor_commit=tally.refactor_commit,
                red_tests=tally.red_tests,
                passing=tally.passing,
                review_reasons=tally.review_reasons,
                experiment=tally.experiment,
                experiment_running=tally.experiment is not None and bool(tally.unended),
                raced=tally.raced,
            )
        )
    marked = test_list.raced(story_id)
    return StoryState(
        id=story_id,
        key=key,
        branch=story_branch(feature, key),
        created=story.created,
        database=story.database,
        worktree=story.worktree,
        base_commit=story.base_commit,
        baseline_passing=story.baseline,
        items=tuple(items),
        gate=story.gate,
        gate_actor=story.gate_actor,
        merged=story.merged,
        approaches=marked[0] if marked else None,
        raced_items=marked[1] if marked else (),
    )
