"""The transition table's build half: `next_action` once the design is approved.

Branches, one TDD cycle per test-list item (RED, GREEN and its repairs, REVIEW, REFACTOR), the
story gate and merge, then the deploy and promote lanes. States are built by hand (see `item`,
`story`, `build` below), so each row says exactly which facts lead to which action.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from consort.core.config import GateMode
from consort.core.errors import ExitCode
from consort.core.machine import Action, next_action
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
    ItemStage,
    ItemState,
    State,
    StoryState,
)
from consort.core.vocabulary import ActionKind, Lane, Role, Step

KEY = "F1-stock-visibility"
FEATURE_BRANCH = f"feature/{KEY}"
S1, S2 = "S1-file-stock", "S2-stock-by-location"
DONE = ItemStage.DONE
INTERACTIVE, PROXY = GateMode.INTERACTIVE, GateMode.PROXY


def item(
    ident: str = "T1",
    stage: ItemStage = ItemStage.RED,
    *,
    failures: int = 0,
    feedback: str | None = None,
) -> ItemState:
    return ItemState(
        id=ident, title=f"title of {ident}", stage=stage, failures=failures, feedback=feedback
    )


def story(
    key: str = S1,
    *items: ItemState,
    created: bool = True,
    gate: GateStatus = GateStatus.OPEN,
    merged: bool = False,
) -> StoryState:
    return StoryState(
        id=key.split("-", 1)[0],
        key=key,
        branch=f"story/{KEY}/{key}",
        created=created,
        database=f"db_{key}" if created else None,
        worktree=f"/wt/{key}" if created else None,
        base_commit="b" * 40 if created else None,
        baseline_passing=(),
        items=items,
        gate=gate,
        gate_actor=None,
        merged=merged,
    )


def merged(key: str = S1) -> StoryState:
    return story(key, item("T1", DONE), gate=GateStatus.APPROVED, merged=True)


def build(
    *stories: StoryState,
    created: bool = True,
    deployed: bool = False,
    deploy_gate: GateStatus = GateStatus.OPEN,
    promote_gate: GateStatus = GateStatus.OPEN,
    promoted: bool = False,
) -> BuildState:
    return BuildState(
        feature_branch=FEATURE_BRANCH,
        base_branch="main",
        created=created,
        database="db_feature" if created else None,
        stories=stories,
        deployed=deployed,
        deploy_gate=deploy_gate,
        promote_gate=promote_gate,
        promoted=promoted,
    )


def approved_feature(
    lane: BuildState | None,
    key: str = KEY,
    *,
    escalation: Escalation | None = None,
    drifted: tuple[str, ...] = (),
) -> FeatureState:
    """A feature whose design is accepted and approved, with `lane` as its build state."""
    artifacts = {
        s.artifact: ArtifactState(
            s.artifact, ArtifactCondition.ACCEPTED, f".consort/features/{key}/{s.artifact}.json"
        )
        for s in DESIGN_STEPS
    }
    gate = GateState(
        GateKind.DESIGN,
        GateStatus.APPROVED,
        approved_hashes={s.artifact.value: "a" * 64 for s in DESIGN_STEPS},
        drifted=drifted,
        actor="human",
        seq=9,
    )
    return FeatureState(
        id=key,
        title="Stock visibility",
        user_facing=True,
        artifacts=artifacts,
        failures={},
        feedback={},
        escalation=escalation,
        design_gate=gate,
        build=lane,
    )


def state(
    lane: BuildState | None,
    *,
    mode: GateMode = INTERACTIVE,
    max_retries: int = 2,
    repair_attempts: int = 3,
) -> State:
    return State(
        features=(approved_feature(lane),),
        gate_mode=mode,
        max_retries=max_retries,
        repair_attempts=repair_attempts,
    )


def turn(
    stage_step: tuple[Role, Step],
    reason: str,
    *,
    story_key: str = S1,
    ident: str = "T1",
    attempt: int = 1,
    feedback: str | None = None,
) -> Action:
    role, step = stage_step
    return Action(
        ActionKind.RUN_TURN,
        Lane.BUILD,
        reason,
        feature=KEY,
        role=role,
        step=step,
        attempt=attempt,
        feedback=feedback,
        story=story_key,
        item=ident,
    )


NAV_RED = (Role.NAVIGATOR, Step.RED)
DRV_GREEN = (Role.DRIVER, Step.GREEN)
DRV_REPAIR = (Role.DRIVER, Step.REPAIR)
NAV_REVIEW = (Role.NAVIGATOR, Step.REVIEW)
DRV_REFACTOR = (Role.DRIVER, Step.REFACTOR)


# ---- the table ---------------------------------------------------------------------------------

STORY_GATE_WAIT = Action(
    ActionKind.AWAIT_GATE,
    Lane.BUILD,
    f"every cycle of {S1} is done; waiting for the story's acceptance",
    feature=KEY,
    story=S1,
    gate=GateKind.STORY,
    command="consort approve story F1/S1",
)


def marked(subject: StoryState, approaches: int, *items: str) -> StoryState:
    """The story as a test list that marks `items` for `approaches` approaches makes it."""
    return replace(subject, approaches=approaches, raced_items=items)


def racing(subject: ItemState, *, running: bool) -> ItemState:
    return replace(subject, experiment=1, experiment_running=running, raced=True)


RACE_T1 = Action(
    ActionKind.RUN_EXPERIMENT,
    Lane.BUILD,
    "T1: the design marks S1 for 3 approaches: race them",
    feature=KEY,
    story=S1,
    item="T1",
    attempt=3,
)
AWAIT_T1 = Action(
    ActionKind.AWAIT_EXPERIMENT,
    Lane.BUILD,
    "an experiment raced approaches to T1's GREEN; a person selects one",
    feature=KEY,
    story=S1,
    item="T1",
    command="consort experiment compare F1/S1, then consort experiment select F1/S1 NAME",
)

ROWS: Sequence[tuple[str, State, Action]] = [
    (
        "unreadable-design",
        state(None),
        Action(
            ActionKind.FIX_ARTIFACT,
            Lane.BUILD,
            "the approved spec or test list cannot be read",
            feature=KEY,
            command="consort verify",
        ),
    ),
    (
        "no-feature-branch",
        state(build(story(S1, item(), created=False), created=False)),
        Action(
            ActionKind.CREATE_FEATURE_BRANCH,
            Lane.BUILD,
            f"design approved: create {FEATURE_BRANCH} and its database",
            feature=KEY,
        ),
    ),
    (
        "no-story-branch",
        state(build(story(S1, item(), created=False))),
        Action(
            ActionKind.CREATE_STORY_BRANCH,
            Lane.BUILD,
            f"start story {S1}: create story/{KEY}/{S1}, its database and worktree",
            feature=KEY,
            story=S1,
        ),
    ),
    (
        "merged-stories-are-skipped",
        state(build(merged(S1), story(S2, item("T5"), created=False))),
        Action(
            ActionKind.CREATE_STORY_BRANCH,
            Lane.BUILD,
            f"start story {S2}: create story/{KEY}/{S2}, its database and worktree",
            feature=KEY,
            story=S2,
        ),
    ),
    (
        "red",
        state(build(story(S1, item("T1", ItemStage.RED)))),
        turn(NAV_RED, "T1 (title of T1): write the failing test"),
    ),
    (
        "green",
        state(build(story(S1, item("T1", ItemStage.GREEN)))),
        turn(DRV_GREEN, "T1: make the new test pass with the least code"),
    ),
    # A story the design marks for several approaches: its marked cycles' GREEN is raced.
    (
        "green-of-a-marked-cycle-is-raced",
        state(build(marked(story(S1, item("T1", ItemStage.GREEN)), 3, "T1"))),
        RACE_T1,
    ),
    (
        "a-cycle-the-mark-leaves-out-is-built-as-usual",
        state(build(marked(story(S1, item("T2", ItemStage.GREEN)), 3, "T1"))),
        turn(DRV_GREEN, "T2: make the new test pass with the least code", ident="T2"),
    ),
    (
        "a-marked-cycle-already-raced-and-discarded-is-built-as-usual",
        state(build(marked(story(S1, replace(item("T1", ItemStage.GREEN), raced=True)), 3, "T1"))),
        turn(DRV_GREEN, "T1: make the new test pass with the least code"),
    ),
    (
        "a-marked-experiment-stopped-half-way-is-resumed",
        state(build(marked(story(S1, racing(item("T1", ItemStage.GREEN), running=True)), 3, "T1"))),
        replace(RACE_T1, reason="resume the experiment on T1's GREEN"),
    ),
    (
        "every-approach-ended-waits-for-a-person",
        state(
            build(marked(story(S1, racing(item("T1", ItemStage.GREEN), running=False)), 3, "T1"))
        ),
        AWAIT_T1,
    ),
    (
        "an-unmarked-experiment-stopped-half-way-names-the-command-that-resumes-it",
        state(build(story(S1, racing(item("T1", ItemStage.GREEN), running=True)))),
        replace(
            AWAIT_T1,
            reason="an experiment on T1's GREEN was stopped before every approach ended",
            command="consort experiment F1/S1 (resumes it)",
        ),
    ),
    (
        "review",
        state(build(story(S1, item("T1", ItemStage.REVIEW)))),
        turn(NAV_REVIEW, "T1: review the change"),
    ),
    (
        "refactor-carries-the-review",
        state(build(story(S1, item("T1", ItemStage.REFACTOR, feedback="split it")))),
        turn(DRV_REFACTOR, "T1: refactor as the review asks", feedback="split it"),
    ),
    (
        "done-items-are-skipped",
        state(build(story(S1, item("T1", DONE), item("T2", DONE), item("T3", ItemStage.GREEN)))),
        turn(DRV_GREEN, "T3: make the new test pass with the least code", ident="T3"),
    ),
    (
        "the-first-unfinished-item-wins",
        state(build(story(S1, item("T1", ItemStage.REVIEW), item("T2", ItemStage.RED)))),
        turn(NAV_REVIEW, "T1: review the change"),
    ),
    (
        "red-retry",
        state(
            build(story(S1, item("T1", ItemStage.RED, failures=2, feedback="no test"))),
            max_retries=2,
        ),
        turn(
            NAV_RED,
            "T1 (title of T1): write the failing test (attempt 3)",
            attempt=3,
            feedback="no test",
        ),
    ),
    (
        "green-repair",
        state(build(story(S1, item("T1", ItemStage.GREEN, failures=1, feedback="2 fail")))),
        turn(
            DRV_REPAIR,
            "T1: make the new test pass with the least code (attempt 2)",
            attempt=2,
            feedback="2 fail",
        ),
    ),
    (
        "story-gate-interactive",
        state(build(story(S1, item("T1", DONE), item("T2", DONE)))),
        STORY_GATE_WAIT,
    ),
    (
        "story-gate-rejected-waits-again",
        state(build(story(S1, item("T1", DONE), gate=GateStatus.REJECTED))),
        STORY_GATE_WAIT,
    ),
    (
        "story-without-items-goes-to-its-gate",
        state(build(story(S1))),
        STORY_GATE_WAIT,
    ),
    (
        "story-gate-proxy",
        state(build(story(S1, item("T1", DONE))), mode=PROXY),
        Action(
            ActionKind.PROXY_GATE,
            Lane.BUILD,
            f"every cycle of {S1} is done; the human proxy decides acceptance",
            feature=KEY,
            story=S1,
            gate=GateKind.STORY,
        ),
    ),
    (
        "accepted-story-merges",
        state(build(story(S1, item("T1", DONE), gate=GateStatus.APPROVED))),
        Action(
            ActionKind.MERGE_STORY,
            Lane.BUILD,
            f"story {S1} accepted: merge it into {FEATURE_BRANCH}",
            feature=KEY,
            story=S1,
        ),
    ),
    (
        "every-story-merged-deploys",
        state(build(merged(S1), merged(S2))),
        Action(
            ActionKind.DEPLOY,
            Lane.DEPLOY,
            "every story is merged: prove the migrations, the suite and the running app on a "
            "throwaway copy of the parent database",
            feature=KEY,
        ),
    ),
    (
        "deploy-gate-interactive",
        state(build(merged(), deployed=True)),
        Action(
            ActionKind.AWAIT_GATE,
            Lane.DEPLOY,
            "the deploy proof holds; waiting for the product owner",
            feature=KEY,
            gate=GateKind.DEPLOY,
            command="consort approve deploy F1",
        ),
    ),
    (
        "deploy-gate-proxy",
        state(build(merged(), deployed=True), mode=PROXY),
        Action(
            ActionKind.PROXY_GATE,
            Lane.DEPLOY,
            "the deploy proof holds; the human proxy decides",
            feature=KEY,
            gate=GateKind.DEPLOY,
        ),
    ),
    (
        "promote-gate-interactive",
        state(build(merged(), deployed=True, deploy_gate=GateStatus.APPROVED)),
        Action(
            ActionKind.AWAIT_GATE,
            Lane.PROMOTE,
            "deploy approved; promote next; waiting for the product owner",
            feature=KEY,
            gate=GateKind.PROMOTE,
            command="consort approve promote F1",
        ),
    ),
    (
        "promote-gate-proxy",
        state(build(merged(), deployed=True, deploy_gate=GateStatus.APPROVED), mode=PROXY),
        Action(
            ActionKind.PROXY_GATE,
            Lane.PROMOTE,
            "deploy approved; promote next; the human proxy decides",
            feature=KEY,
            gate=GateKind.PROMOTE,
        ),
    ),
    (
        "promote",
        state(
            build(
                merged(),
                deployed=True,
                deploy_gate=GateStatus.APPROVED,
                promote_gate=GateStatus.APPROVED,
            )
        ),
        Action(
            ActionKind.PROMOTE,
            Lane.PROMOTE,
            f"promote approved: merge {FEATURE_BRANCH} into main and migrate it",
            feature=KEY,
        ),
    ),
    (
        "promoted-is-done",
        state(build(merged(), deployed=True, promoted=True)),
        Action(ActionKind.DONE, Lane.DONE, "every feature is done"),
    ),
]


@pytest.mark.parametrize(("subject", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_the_build_table(subject: State, expected: Action) -> None:
    assert next_action(subject) == expected
    assert next_action(subject, KEY) == expected  # the only feature, named or not


# ---- what stops and what does not --------------------------------------------------------------

ORCHESTRATOR_ACTIONS = {
    ActionKind.CREATE_FEATURE_BRANCH,
    ActionKind.CREATE_STORY_BRANCH,
    ActionKind.RUN_TURN,
    ActionKind.MERGE_STORY,
    ActionKind.DEPLOY,
    ActionKind.PROMOTE,
    ActionKind.PROXY_GATE,
    ActionKind.ESCALATE,
    ActionKind.RUN_EXPERIMENT,
}


@pytest.mark.parametrize(("subject", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_only_a_person_s_step_stops_the_build(subject: State, expected: Action) -> None:
    action = next_action(subject)
    assert action.stops is (action.kind not in ORCHESTRATOR_ACTIONS)
    if action.kind is ActionKind.AWAIT_GATE:
        assert action.exit_code is ExitCode.OK and action.command is not None


# ---- attempts and escalation -------------------------------------------------------------------

STAGE_TURNS = [
    (ItemStage.RED, NAV_RED),
    (ItemStage.REVIEW, NAV_REVIEW),
    (ItemStage.REFACTOR, DRV_REFACTOR),
]


@pytest.mark.parametrize("max_retries", [0, 1, 2, 5])
@pytest.mark.parametrize(("stage", "role_step"), STAGE_TURNS, ids=[s.value for s, _ in STAGE_TURNS])
def test_red_review_and_refactor_get_the_turn_retries(
    stage: ItemStage, role_step: tuple[Role, Step], max_retries: int
) -> None:
    """Attempts 1 .. max_retries + 1 run; one more failure escalates, with the feedback."""
    for failures in range(max_retries + 1):
        cycle = item("T1", stage, failures=failures, feedback="why" if failures else None)
        action = next_action(
            state(build(story(S1, cycle)), max_retries=max_retries, repair_attempts=9)
        )
        assert action.kind is ActionKind.RUN_TURN
        assert (action.role, action.step) == role_step
        assert action.attempt == failures + 1
        assert action.feedback == cycle.feedback
    cycle = item("T1", stage, failures=max_retries + 1, feedback="still failing")
    action = next_action(state(build(story(S1, cycle)), max_retries=max_retries, repair_attempts=9))
    role, step = role_step
    assert action == Action(
        ActionKind.ESCALATE,
        Lane.BUILD,
        f"{role.value} failed {max_retries + 1} attempts at {stage.value} of T1",
        feature=KEY,
        role=role,
        step=step,
        feedback="still failing",
        story=S1,
        item="T1",
    )


@pytest.mark.parametrize("repair_attempts", [0, 1, 3])
def test_green_gets_the_repair_attempts_not_the_turn_retries(repair_attempts: int) -> None:
    """The first GREEN is a green turn; each failed one is followed by a repair turn, up to
    `repair_attempts` of them (whatever max_retries says), then the cycle escalates."""

    def action_after(failures: int) -> Action:
        cycle = item("T1", ItemStage.GREEN, failures=failures, feedback="red" if failures else None)
        return next_action(
            state(build(story(S1, cycle)), max_retries=1, repair_attempts=repair_attempts)
        )

    first = action_after(0)
    assert (first.kind, first.step, first.attempt) == (ActionKind.RUN_TURN, Step.GREEN, 1)
    for failures in range(1, repair_attempts + 1):
        repair = action_after(failures)
        assert (repair.kind, repair.role, repair.step) == (
            ActionKind.RUN_TURN,
            Role.DRIVER,
            Step.REPAIR,
        )
        assert repair.attempt == failures + 1
        assert repair.feedback == "red"
    escalation = action_after(repair_attempts + 1)
    assert escalation.kind is ActionKind.ESCALATE
    assert (escalation.story, escalation.item) == (S1, "T1")
    assert (escalation.role, escalation.step) == (Role.DRIVER, Step.REPAIR)
    assert escalation.reason == f"driver failed {repair_attempts + 1} attempts at green of T1"


def test_failures_of_a_done_item_do_not_hold_up_the_next() -> None:
    subject = state(build(story(S1, item("T1", DONE, failures=7), item("T2"))), max_retries=0)
    action = next_action(subject)
    assert (action.kind, action.item, action.attempt) == (ActionKind.RUN_TURN, "T2", 1)


@pytest.mark.parametrize("step", [Step.RED, Step.GREEN, Step.REPAIR, Step.REVIEW, Step.REFACTOR])
def test_an_open_build_escalation_waits_for_a_person(step: Step) -> None:
    escalation = Escalation(step, "driver failed 4 attempts", seq=30, story=S1, item="T1")
    subject = State(
        features=(
            approved_feature(build(story(S1, item("T1", ItemStage.GREEN))), escalation=escalation),
        ),
        gate_mode=PROXY,  # the proxy decides gates, never escalations
        max_retries=2,
    )
    action = next_action(subject)
    assert action == Action(
        ActionKind.AWAIT_ESCALATION,
        Lane.BUILD,
        f"{step.value}: driver failed 4 attempts",
        feature=KEY,
        step=step,
        command=f'consort retry {KEY} --note "..."',
    )
    assert action.stops and action.exit_code is ExitCode.ESCALATION


# ---- across features ---------------------------------------------------------------------------


def test_a_promoted_feature_hands_over_to_the_next() -> None:
    done = approved_feature(build(merged(), deployed=True, promoted=True))
    second = approved_feature(build(story(S1, item()), created=False), key="F2-second")
    action = next_action(State(features=(done, second), gate_mode=INTERACTIVE, max_retries=2))
    assert (action.kind, action.feature) == (ActionKind.CREATE_FEATURE_BRANCH, "F2-second")


def test_a_feature_in_the_build_lane_comes_before_a_later_one() -> None:
    first = approved_feature(build(story(S1, item("T1", ItemStage.GREEN))))
    second = approved_feature(build(story(S1, item()), created=False), key="F2-second")
    action = next_action(State(features=(first, second), gate_mode=INTERACTIVE, max_retries=2))
    assert (action.kind, action.feature, action.step) == (ActionKind.RUN_TURN, KEY, Step.GREEN)
    other = next_action(
        State(features=(first, second), gate_mode=INTERACTIVE, max_retries=2), "F2-second"
    )
    assert (other.kind, other.feature) == (ActionKind.CREATE_FEATURE_BRANCH, "F2-second")


def test_drift_of_an_approved_design_stops_the_build_of_every_feature() -> None:
    building = approved_feature(build(story(S1, item("T1", ItemStage.GREEN))))
    drifted = approved_feature(
        build(merged(), deployed=True, promoted=True),
        key="F2-second",
        drifted=(".consort/features/F2-second/architecture.json",),
    )
    subject = State(features=(building, drifted), gate_mode=PROXY, max_retries=2)
    for scope in (None, KEY):
        action = next_action(subject, scope)
        assert (action.kind, action.feature) == (ActionKind.INTEGRITY_STOP, "F2-second")
        assert action.exit_code is ExitCode.INTEGRITY


# ---- purity ------------------------------------------------------------------------------------


@pytest.mark.parametrize("subject", [r[1] for r in ROWS], ids=[r[0] for r in ROWS])
def test_deciding_changes_nothing(subject: State) -> None:
    copy = replace(subject, features=tuple(replace(f) for f in subject.features))
    first = next_action(subject)
    assert next_action(copy) == first
    assert subject == copy


@pytest.mark.parametrize("subject", [r[1] for r in ROWS], ids=[r[0] for r in ROWS])
def test_build_actions_name_no_design_artifact_or_step(subject: State) -> None:
    action = next_action(subject)
    assert action.artifact is None
    assert action.step is None or action.step.is_build
