"""Derive the build lane's state of one feature from its ledger events (pure).

Subjects name where an event belongs: "F1-x" (the feature), "F1-x/S1-y" (a story) and
"F1-x/S1-y/T3" (one cycle). Stories are built in the spec's order, and within a story the
test-list items in the list's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from consort.core.artifacts.spec import FeatureSpec
from consort.core.artifacts.test_list import TestList
from consort.core.ledger import Event, EventType
from consort.core.state import BuildState, GateStatus, ItemStage, ItemState, StoryState

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


def _run_tests(data: dict[str, Any], key: str) -> tuple[str, ...]:
    run = data.get("run") or {}
    return tuple(str(t) for t in run.get(key, ()))


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
        data = event.data
        if event.type is EventType.BRANCH_CREATED and len(parts) == 1:
            created = True
            database = data.get("database")
            base_branch = data.get("base")
            continue
        if len(parts) == 1 and event.type in _LANE_EVENTS:
            lanes[_LANE_EVENTS[event.type](data)] = True
            continue
        if len(parts) == 1 and data.get("story") and data.get("item"):
            # Escalations are the feature's (they stop it), but name the cycle they concern.
            parts = [parts[0], str(data["story"]), str(data["item"])]
        if len(parts) < 2 or parts[1] not in stories:
            continue
        story = stories[parts[1]]
        if len(parts) == 2:
            _fold_story(story, event)
            continue
        item = story.items.setdefault(parts[2], _Item())
        _fold_item(item, event)
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


def _gate_flag(data: dict[str, Any]) -> str:
    return f"{data.get('gate')}-gate"


# Feature-level events of the deploy and promote lanes, and the flag each one sets.
_LANE_EVENTS: dict[EventType, Callable[[dict[str, Any]], str]] = {
    EventType.DEPLOY_VERIFIED: lambda _data: "deployed",
    EventType.GATE_APPROVED: _gate_flag,
    EventType.FEATURE_PROMOTED: lambda _data: "promoted",
}


def _fold_story(story: _Story, event: Event) -> None:
    data = event.data
    if event.type is EventType.BRANCH_CREATED:
        story.created = True
        story.database = data.get("database")
        story.worktree = data.get("worktree")
        story.base_commit = data.get("base_commit")
        story.baseline = _run_tests(data, "passing")
    elif event.type is EventType.GATE_APPROVED and data.get("gate") == "story":
        story.gate = GateStatus.APPROVED
        story.gate_actor = event.actor.value
    elif event.type is EventType.GATE_REJECTED and data.get("gate") == "story":
        story.gate = GateStatus.REJECTED
        story.gate_actor = event.actor.value
    elif event.type is EventType.STORY_MERGED:
        story.merged = True


# A failed attempt at the item's current stage (TURN_FAILED: a review whose verdict did not
# validate; RED/GREEN/REFACTOR failures carry the runner's reasons).
_ITEM_FAILURES = frozenset(
    {EventType.RED_FAILED, EventType.GREEN_FAILED, EventType.REFACTOR_FAILED, EventType.TURN_FAILED}
)


def _fold_item(item: _Item, event: Event) -> None:
    data = event.data
    kind = event.type
    if kind is EventType.RED_VERIFIED:
        item.red_commit = data["commit"]
        item.red_tests = _run_tests(data, "tests")
        item.passing = _run_tests(data, "passing")
        item.advance(ItemStage.GREEN)
    elif kind is EventType.AMENDMENT_APPROVED:
        # The product owner changed the test: GREEN now starts from (and must keep) that commit.
        item.red_commit = data["commit"]
        item.failures = 0
        item.feedback = f"The product owner amended the test: {data.get('note', '')}"
    elif kind is EventType.GREEN_VERIFIED:
        item.green_commit = data["commit"]
        item.passing = _run_tests(data, "passing")
        item.advance(ItemStage.REVIEW)
    elif kind is EventType.REVIEW_RECORDED:
        item.review_reasons = tuple(str(r) for r in data.get("reasons", ()))
        verdict = data.get("verdict")
        item.advance(ItemStage.REFACTOR if verdict == "refactor" else ItemStage.DONE)
        if verdict == "refactor":
            item.feedback = "The review asks you to refactor: " + "; ".join(item.review_reasons)
    elif kind is EventType.REFACTOR_VERIFIED:
        item.refactor_commit = data["commit"]
        item.passing = _run_tests(data, "passing") or item.passing
        item.advance(ItemStage.DONE)
    elif kind in _ITEM_FAILURES:
        item.fail(str(data.get("feedback", "")))
    elif kind is EventType.ESCALATION_RESOLVED:
        item.failures = 0
        note = data.get("note")
        item.feedback = f"The product owner says: {note}" if note else item.feedback


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
            )
        )
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
    )
