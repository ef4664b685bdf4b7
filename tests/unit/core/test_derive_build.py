"""`derive_build`: the build lane's state of one feature, folded from its ledger events.

Events are built here from the typed payloads, as the lanes record them, for the StockFlow spec
and test list of tests/fixtures/artifacts/ (S1: T1-T4, S2: T5-T6, S3: T7-T8). No disk, no server.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from consort.core.artifacts.spec import FeatureSpec
from consort.core.artifacts.test_list import TestList
from consort.core.config import GateMode
from consort.core.derive_build import derive_build, feature_branch, story_branch
from consort.core.ledger import GENESIS, Actor, Event
from consort.core.ledger import events as ev
from consort.core.machine import Action, next_action
from consort.core.state import (
    DESIGN_STEPS,
    ArtifactCondition,
    ArtifactState,
    BuildState,
    FeatureState,
    GateState,
    GateStatus,
    ItemStage,
    ItemState,
    State,
    StoryState,
)
from consort.core.vocabulary import ActionKind, GateKind, Step, Verdict
from tests import helpers

KEY = "F1-stock-visibility"
SPEC = FeatureSpec.model_validate_json(
    (helpers.FIXTURES / "artifacts" / "feature-spec.json").read_text()
)
TESTS = TestList.model_validate_json(
    (helpers.FIXTURES / "artifacts" / "test-list.json").read_text()
)
S1, S2, S3 = "S1-file-stock", "S2-stock-by-location", "S3-sku-detail"
T1 = f"{KEY}/{S1}/T1"
STORY_ITEMS = {S1: ("T1", "T2", "T3", "T4"), S2: ("T5", "T6"), S3: ("T7", "T8")}
WHEN = datetime(2025, 6, 2, 10, 15, tzinfo=UTC)

Recorded = tuple[ev.EventPayload, str, Actor]  # what a lane records: payload, subject, actor


def at(payload: ev.EventPayload, subject: str = T1, actor: Actor = Actor.ORCHESTRATOR) -> Recorded:
    return payload, subject, actor


def events(recorded: Sequence[Recorded]) -> list[Event]:
    """The ledger events, as `Ledger.record` writes them (complete payloads only)."""
    return [
        Event(seq, WHEN, payload.event_type, actor, subject, payload.data_to_write(), GENESIS)
        for seq, (payload, subject, actor) in enumerate(recorded, start=1)
    ]


def derived(*recorded: Recorded) -> BuildState:
    return derive_build(KEY, events(recorded), SPEC, TESTS)


def item_of(lane: BuildState, story_key: str, ident: str) -> ItemState:
    story = next(s for s in lane.stories if s.key == story_key)
    return next(i for i in story.items if i.id == ident)


def story_of(lane: BuildState, story_key: str) -> StoryState:
    return next(s for s in lane.stories if s.key == story_key)


def run(
    *, passing: Sequence[str] = (), tests: Sequence[str] = (), commit: str = ""
) -> ev.RunRecord:
    return ev.RunRecord(commit=commit, passing=list(passing), tests=list(tests), exit_code=0)


# ---- the payloads the lanes record --------------------------------------------------------------

OLD, NEW = "tests/test_skus.py::test_old", "tests/test_skus.py::test_new"


def red_ok(commit: str = "r1") -> ev.RedVerified:
    return ev.RedVerified(
        turn="0007-navigator-red", commit=commit, plan={}, run=run(tests=[OLD, NEW], passing=[OLD])
    )


def failed(kind: type[ev.StepFailed], step: Step, why: str, attempt: int = 1) -> ev.StepFailed:
    return kind(turn="0008-turn", step=step, attempt=attempt, reasons=[why], feedback=why, run=None)


def green_ok(commit: str = "g1") -> ev.GreenVerified:
    return ev.GreenVerified(
        turn="0009-driver-green", commit=commit, red_commit="r1", run=run(passing=[OLD, NEW])
    )


def review(verdict: Verdict, *reasons: str) -> ev.ReviewRecorded:
    return ev.ReviewRecorded(
        turn="0010-navigator-review", verdict=verdict, reasons=list(reasons), smells=[]
    )


def refactor_ok(
    commit: str | None = "f1", passing: Sequence[str] | None = None
) -> ev.RefactorVerified:
    return ev.RefactorVerified(
        turn="0011-driver-refactor",
        commit=commit or "g1",
        red_commit="r1",
        unchanged=commit is None,
        run=run(passing=passing) if passing is not None else None,
    )


def raised(note_step: Step = Step.REPAIR) -> Recorded:
    payload = ev.EscalationRaised(
        step=note_step, reason="driver failed 4 attempts", feedback="2 fail", story=S1, item="T1"
    )
    return at(payload, KEY)


def resolved(note: str | None) -> Recorded:
    payload = ev.EscalationResolved(step=Step.REPAIR, note=note, story=S1, item="T1")
    return at(payload, KEY, Actor.HUMAN)


def amended(note: str) -> Recorded:
    payload = ev.AmendmentApproved(commit="r2", previous="r1", files={}, note=note)
    return at(payload, actor=Actor.HUMAN)


RED_FAIL = at(failed(ev.RedFailed, Step.RED, "the new test passes already"))
GREEN_FAIL = at(failed(ev.GreenFailed, Step.GREEN, "1 test fails"))
REPAIR_FAIL = at(failed(ev.GreenFailed, Step.REPAIR, "2 fail", attempt=2))
REVIEW_FAIL = at(
    ev.TurnFailed(turn="0010-nav", step=Step.REVIEW, errors=["verdict: missing"], feedback="bad")
)
REFACTOR_FAIL = at(failed(ev.RefactorFailed, Step.REFACTOR, "tests were changed"))
TO_REVIEW = (at(red_ok()), at(green_ok()))

FRESH = ItemState(
    id="T1", title=TESTS.items[0].title, stage=ItemStage.RED, failures=0, feedback=None
)
AT_GREEN = replace(
    FRESH, stage=ItemStage.GREEN, red_commit="r1", red_tests=(OLD, NEW), passing=(OLD,)
)
AT_REVIEW = replace(AT_GREEN, stage=ItemStage.REVIEW, green_commit="g1", passing=(OLD, NEW))


# ---- one cycle: every event kind, in the orders the lanes write them -----------------------------

ITEM_ROWS: Sequence[tuple[str, Sequence[Recorded], ItemState]] = [
    ("nothing-yet", [], FRESH),
    ("red-verified", [at(red_ok())], AT_GREEN),
    (
        "red-failures-count-and-keep-the-last-feedback",
        [RED_FAIL, at(failed(ev.RedFailed, Step.RED, "no test was written", 2))],
        replace(FRESH, failures=2, feedback="no test was written"),
    ),
    ("red-after-failures-starts-green-afresh", [RED_FAIL, RED_FAIL, at(red_ok())], AT_GREEN),
    (
        "green-failure",
        [at(red_ok()), GREEN_FAIL],
        replace(AT_GREEN, failures=1, feedback="1 test fails"),
    ),
    (
        "repairs-count-with-green",
        [at(red_ok()), GREEN_FAIL, REPAIR_FAIL],
        replace(AT_GREEN, failures=2, feedback="2 fail"),
    ),
    ("green-verified-after-repairs", [at(red_ok()), GREEN_FAIL, at(green_ok())], AT_REVIEW),
    (
        "review-approves",
        [*TO_REVIEW, at(review(Verdict.APPROVE, "fine as it is"))],
        replace(AT_REVIEW, stage=ItemStage.DONE, review_reasons=("fine as it is",)),
    ),
    (
        "review-asks-for-a-refactor",
        [*TO_REVIEW, at(review(Verdict.REFACTOR, "split the route", "name the rule"))],
        replace(
            AT_REVIEW,
            stage=ItemStage.REFACTOR,
            review_reasons=("split the route", "name the rule"),
            feedback="The review asks you to refactor: split the route; name the rule",
        ),
    ),
    (
        "a-review-that-does-not-validate-is-a-failed-attempt",
        [*TO_REVIEW, REVIEW_FAIL, REVIEW_FAIL],
        replace(AT_REVIEW, failures=2, feedback="bad"),
    ),
    (
        "refactor-verified",
        [*TO_REVIEW, at(review(Verdict.REFACTOR, "x")), at(refactor_ok("f1", passing=[NEW]))],
        replace(
            AT_REVIEW,
            stage=ItemStage.DONE,
            refactor_commit="f1",
            passing=(NEW,),
            review_reasons=("x",),
        ),
    ),
    (
        "an-unchanged-refactor-keeps-green-s-passing-tests",
        [*TO_REVIEW, at(review(Verdict.REFACTOR, "x")), at(refactor_ok(None))],
        replace(AT_REVIEW, stage=ItemStage.DONE, refactor_commit="g1", review_reasons=("x",)),
    ),
    (
        "refactor-failure",
        [*TO_REVIEW, at(review(Verdict.REFACTOR, "x")), REFACTOR_FAIL],
        replace(
            AT_REVIEW,
            stage=ItemStage.REFACTOR,
            failures=1,
            feedback="tests were changed",
            review_reasons=("x",),
        ),
    ),
    (
        "an-amended-test-restarts-green-from-the-new-commit",
        [at(red_ok()), GREEN_FAIL, REPAIR_FAIL, amended("codes ignore case")],
        replace(
            AT_GREEN,
            red_commit="r2",
            feedback="The product owner amended the test: codes ignore case",
        ),
    ),
    (
        "a-raised-escalation-changes-nothing-in-the-cycle",
        [at(red_ok()), GREEN_FAIL, REPAIR_FAIL, raised()],
        replace(AT_GREEN, failures=2, feedback="2 fail"),
    ),
    (
        "a-resolved-escalation-gives-fresh-attempts-and-the-note",
        [at(red_ok()), GREEN_FAIL, REPAIR_FAIL, raised(), resolved("use a unique index")],
        replace(AT_GREEN, feedback="The product owner says: use a unique index"),
    ),
    (
        "resolved-without-a-note-keeps-the-last-feedback",
        [at(red_ok()), GREEN_FAIL, REPAIR_FAIL, raised(), resolved(None)],
        replace(AT_GREEN, feedback="2 fail"),
    ),
    (
        "a-design-failure-of-the-feature-is-not-the-cycle-s",
        [
            at(red_ok()),
            at(ev.TurnFailed(turn="1", step=Step.SPEC, errors=["x"], feedback="x"), KEY),
        ],
        AT_GREEN,
    ),
]


@pytest.mark.parametrize(
    ("recorded", "expected"), [r[1:] for r in ITEM_ROWS], ids=[r[0] for r in ITEM_ROWS]
)
def test_a_cycle_folds_its_events(recorded: Sequence[Recorded], expected: ItemState) -> None:
    lane = derived(*recorded)
    assert item_of(lane, S1, "T1") == expected
    others = [i for s in lane.stories for i in s.items if i.id != "T1"]
    assert all((i.stage, i.failures, i.feedback) == (ItemStage.RED, 0, None) for i in others)


def test_events_of_one_cycle_leave_the_others_alone() -> None:
    t2 = f"{KEY}/{S1}/T2"
    lane = derived(
        *TO_REVIEW, at(red_ok("r7"), t2), at(failed(ev.GreenFailed, Step.GREEN, "no"), t2)
    )
    assert item_of(lane, S1, "T1") == AT_REVIEW
    assert (item_of(lane, S1, "T2").stage, item_of(lane, S1, "T2").failures) == (ItemStage.GREEN, 1)
    assert item_of(lane, S1, "T2").red_commit == "r7"
    assert item_of(lane, S1, "T3") == replace(FRESH, id="T3", title=TESTS.items[2].title)


def test_events_for_what_the_spec_and_test_list_do_not_have_are_ignored() -> None:
    strangers = (
        at(red_ok(), f"{KEY}/{S1}/T9"),  # not an item of the list
        at(red_ok(), f"{KEY}/{S2}/T1"),  # T1 belongs to S1, not S2
        at(red_ok(), f"{KEY}/S9-nope/T1"),  # no such story
        at(ev.BranchCreated(branch="story/x", database="d"), f"{KEY}/S9-nope"),
    )
    assert derived(*strangers) == derived()


# ---- stories, branches, the lane as a whole ------------------------------------------------------


def test_nothing_recorded_is_the_plan_of_the_spec_and_the_list() -> None:
    lane = derived()
    assert (lane.feature_branch, lane.base_branch, lane.created, lane.database) == (
        f"feature/{KEY}",
        None,
        False,
        None,
    )
    assert [s.key for s in lane.stories] == [S1, S2, S3]  # the spec's order
    for story in lane.stories:
        assert story.branch == f"story/{KEY}/{story.key}"
        assert not story.created and not story.merged and story.gate is GateStatus.OPEN
        assert tuple(i.id for i in story.items) == STORY_ITEMS[story.key]
        assert [i.title for i in story.items] == [
            t.title for t in TESTS.items if t.id in STORY_ITEMS[story.key]
        ]
    assert (lane.deployed, lane.deploy_gate, lane.promote_gate, lane.promoted) == (
        False,
        GateStatus.OPEN,
        GateStatus.OPEN,
        False,
    )


def test_branch_names() -> None:
    assert feature_branch(KEY) == f"feature/{KEY}"
    assert story_branch(KEY, S2) == f"story/{KEY}/{S2}"


def test_branches_and_their_databases() -> None:
    lane = derived(
        at(ev.BranchCreated(branch=f"feature/{KEY}", database="feature_f1", base="main"), KEY),
        at(
            ev.BranchCreated(
                branch=f"story/{KEY}/{S2}",
                database="story_f1_s2",
                worktree="/p/.consort/worktrees/F1/S2",
                base_commit="b" * 40,
                run=run(passing=[OLD]),
            ),
            f"{KEY}/{S2}",
        ),
    )
    assert (lane.created, lane.database, lane.base_branch) == (True, "feature_f1", "main")
    s2 = story_of(lane, S2)
    assert (s2.created, s2.database, s2.worktree, s2.base_commit) == (
        True,
        "story_f1_s2",
        "/p/.consort/worktrees/F1/S2",
        "b" * 40,
    )
    assert s2.baseline_passing == (OLD,)
    assert s2.head == "b" * 40 and s2.passing() == (OLD,)  # nothing proven yet: the baseline
    assert not story_of(lane, S1).created and not story_of(lane, S3).created


def test_a_story_s_head_and_passing_tests_follow_its_last_proven_cycle() -> None:
    t2 = f"{KEY}/{S1}/T2"
    lane = derived(
        at(
            ev.BranchCreated(branch="s", database="d", worktree="w", base_commit="base", run=run()),
            f"{KEY}/{S1}",
        ),
        *TO_REVIEW,
        at(review(Verdict.APPROVE)),
        at(red_ok("r2"), t2),
    )
    s1 = story_of(lane, S1)
    assert s1.head == "r2"
    assert s1.passing() == (OLD,)  # what T2's RED run saw passing


STORY = f"{KEY}/{S1}"
STORY_ROWS: Sequence[tuple[str, Sequence[Recorded], tuple[GateStatus, str | None, bool]]] = [
    ("open", [], (GateStatus.OPEN, None, False)),
    (
        "accepted-by-the-proxy",
        [at(ev.GateApproved(gate=GateKind.STORY, note="every cycle verified"), STORY, Actor.PROXY)],
        (GateStatus.APPROVED, "proxy", False),
    ),
    (
        "rejected-by-a-person",
        [at(ev.GateRejected(gate=GateKind.STORY, note="not yet"), STORY, Actor.HUMAN)],
        (GateStatus.REJECTED, "human", False),
    ),
    (
        "rejected-then-accepted",
        [
            at(ev.GateRejected(gate=GateKind.STORY, note="no"), STORY, Actor.HUMAN),
            at(ev.GateApproved(gate=GateKind.STORY, note="yes"), STORY, Actor.HUMAN),
        ],
        (GateStatus.APPROVED, "human", False),
    ),
    (
        "another-gate-on-the-story-is-not-its-acceptance",
        [at(ev.GateApproved(gate=GateKind.DEPLOY, note="?"), STORY, Actor.HUMAN)],
        (GateStatus.OPEN, None, False),
    ),
    (
        "merged",
        [
            at(ev.GateApproved(gate=GateKind.STORY, note=None), STORY, Actor.PROXY),
            at(ev.StoryMerged(commit="m1", into=f"feature/{KEY}", run=run()), STORY),
        ],
        (GateStatus.APPROVED, "proxy", True),
    ),
]


@pytest.mark.parametrize(
    ("recorded", "expected"), [r[1:] for r in STORY_ROWS], ids=[r[0] for r in STORY_ROWS]
)
def test_the_story_gate_and_merge(
    recorded: Sequence[Recorded], expected: tuple[GateStatus, str | None, bool]
) -> None:
    lane = derived(*recorded)
    s1 = story_of(lane, S1)
    assert (s1.gate, s1.gate_actor, s1.merged) == expected
    assert all(s.gate is GateStatus.OPEN and not s.merged for s in lane.stories[1:])


def _gate(kind: GateKind, subject: str = KEY) -> Recorded:
    return at(ev.GateApproved(gate=kind, note="ok"), subject, Actor.HUMAN)


DEPLOYED = at(
    ev.DeployVerified(commit="m3", parent_database="feature_f1", run=run(), smoke=[]), KEY
)
LANE_ROWS: Sequence[tuple[str, Sequence[Recorded], tuple[bool, GateStatus, GateStatus, bool]]] = [
    ("nothing", [], (False, GateStatus.OPEN, GateStatus.OPEN, False)),
    ("deploy-proven", [DEPLOYED], (True, GateStatus.OPEN, GateStatus.OPEN, False)),
    (
        "a-failed-proof-is-no-proof",
        [
            at(
                ev.DeployFailed(
                    commit="m3", parent_database="f", run=run(), smoke=[], reasons=["500"]
                ),
                KEY,
            )
        ],
        (False, GateStatus.OPEN, GateStatus.OPEN, False),
    ),
    (
        "deploy-approved",
        [DEPLOYED, _gate(GateKind.DEPLOY)],
        (True, GateStatus.APPROVED, GateStatus.OPEN, False),
    ),
    (
        "promote-approved",
        [DEPLOYED, _gate(GateKind.DEPLOY), _gate(GateKind.PROMOTE)],
        (True, GateStatus.APPROVED, GateStatus.APPROVED, False),
    ),
    (
        "promoted",
        [
            DEPLOYED,
            _gate(GateKind.DEPLOY),
            _gate(GateKind.PROMOTE),
            at(ev.FeaturePromoted(commit="p", into="main", run=run(), deleted=[]), KEY),
        ],
        (True, GateStatus.APPROVED, GateStatus.APPROVED, True),
    ),
    (
        "the-design-approval-opens-no-later-gate",
        [
            at(
                ev.GateApproved(gate=GateKind.DESIGN, note=None, hashes={"ux": "a" * 64}),
                KEY,
                Actor.HUMAN,
            )
        ],
        (False, GateStatus.OPEN, GateStatus.OPEN, False),
    ),
    (
        "a-story-s-acceptance-opens-no-feature-gate",
        [_gate(GateKind.STORY, STORY)],
        (False, GateStatus.OPEN, GateStatus.OPEN, False),
    ),
]


@pytest.mark.parametrize(
    ("recorded", "expected"), [r[1:] for r in LANE_ROWS], ids=[r[0] for r in LANE_ROWS]
)
def test_the_deploy_and_promote_lanes(
    recorded: Sequence[Recorded], expected: tuple[bool, GateStatus, GateStatus, bool]
) -> None:
    lane = derived(*recorded)
    assert (lane.deployed, lane.deploy_gate, lane.promote_gate, lane.promoted) == expected


# ---- derive_build and next_action together: a whole feature, event by event ----------------------


def _feature(lane: BuildState) -> FeatureState:
    return FeatureState(
        id=KEY,
        title="Stock visibility",
        user_facing=True,
        artifacts={
            s.artifact: ArtifactState(s.artifact, ArtifactCondition.ACCEPTED, s.artifact.value)
            for s in DESIGN_STEPS
        },
        failures={},
        feedback={},
        escalation=None,
        design_gate=GateState(GateKind.DESIGN, GateStatus.APPROVED),
        build=lane,
    )


def _turn_result(action: Action, log: Sequence[Recorded]) -> Recorded:
    """What a cycle's turn records had it gone as planned: T2's first GREEN fails once (so a
    repair follows), T1's review asks for a refactor, everything else holds."""
    cycle = f"{KEY}/{action.story}/{action.item}"
    if action.step is Step.RED:
        return at(red_ok(), cycle)
    failed_before = any(isinstance(p, ev.GreenFailed) for p, s, _ in log if s == cycle)
    if action.step is Step.GREEN and action.item == "T2" and not failed_before:
        return at(failed(ev.GreenFailed, Step.GREEN, "1 fails"), cycle)
    if action.step in (Step.GREEN, Step.REPAIR):
        return at(green_ok(), cycle)
    if action.step is Step.REVIEW:
        return at(review(Verdict.REFACTOR if action.item == "T1" else Verdict.APPROVE, "x"), cycle)
    assert action.step is Step.REFACTOR, action
    return at(refactor_ok(), cycle)


def _performed(action: Action, log: Sequence[Recorded]) -> Recorded:
    """What the lane records on performing `action` (the proxy decides every gate)."""
    story = f"{KEY}/{action.story}"
    results = {
        ActionKind.CREATE_FEATURE_BRANCH: lambda: at(
            ev.BranchCreated(branch="f", database="d", base="main"), KEY
        ),
        ActionKind.CREATE_STORY_BRANCH: lambda: at(
            ev.BranchCreated(branch="s", database="d", worktree="w", base_commit="b", run=run()),
            story,
        ),
        ActionKind.RUN_TURN: lambda: _turn_result(action, log),
        ActionKind.PROXY_GATE: lambda: at(
            ev.GateApproved(gate=action.gate, note="p"),
            story if action.gate is GateKind.STORY else KEY,
            Actor.PROXY,
        ),
        ActionKind.MERGE_STORY: lambda: at(ev.StoryMerged(commit="m", into="f", run=run()), story),
        ActionKind.DEPLOY: lambda: DEPLOYED,
        ActionKind.PROMOTE: lambda: at(
            ev.FeaturePromoted(commit="p", into="main", run=run(), deleted=[]), KEY
        ),
    }
    assert action.kind in results, action
    return results[action.kind]()


def _cycle(story: str, item: str, steps: str) -> list[str]:
    return [f"run-turn {story[:2]}/{item} {step}" for step in steps.split()]


def _story(story: str, *cycles: list[str]) -> list[str]:
    short = story[:2]
    return [
        f"create-story-branch {short}",
        *itertools.chain(*cycles),
        f"proxy-gate {short}",
        f"merge-story {short}",
    ]


def _label(action: Action) -> str:
    """'run-turn S1/T2 repair', 'merge-story S1', 'deploy'."""
    parts = [action.kind.value]
    if action.story:
        parts.append(action.story[:2] + (f"/{action.item}" if action.item else ""))
    if action.step:
        parts.append(action.step.value)
    return " ".join(parts)


def test_a_whole_feature_event_by_event_in_proxy_mode() -> None:
    log: list[Recorded] = []
    seen: list[str] = []
    for _ in range(100):
        lane = derive_build(KEY, events(log), SPEC, TESTS)
        action = next_action(State((_feature(lane),), GateMode.PROXY, max_retries=1))
        if action.kind is ActionKind.DONE:
            break
        seen.append(_label(action))
        log.append(_performed(action, log))
    assert seen == [
        "create-feature-branch",
        *_story(
            S1,
            _cycle(S1, "T1", "red green review refactor"),
            _cycle(S1, "T2", "red green repair review"),
            _cycle(S1, "T3", "red green review"),
            _cycle(S1, "T4", "red green review"),
        ),
        *_story(S2, _cycle(S2, "T5", "red green review"), _cycle(S2, "T6", "red green review")),
        *_story(S3, _cycle(S3, "T7", "red green review"), _cycle(S3, "T8", "red green review")),
        "deploy",
        "proxy-gate",
        "proxy-gate",
        "promote",
    ]
    final = derive_build(KEY, events(log), SPEC, TESTS)
    assert final.promoted and all(s.merged for s in final.stories)
    assert all(i.stage is ItemStage.DONE for s in final.stories for i in s.items)


# ---- experiments ------------------------------------------------------------------------------


def _marked_tests(mark: dict[str, object]) -> TestList:
    return TestList.model_validate({**TESTS.model_dump(mode="json"), "experiments": [mark]})


def test_a_story_the_test_list_marks_is_raced_at_its_marked_cycles() -> None:
    every = derive_build(KEY, [], SPEC, _marked_tests({"story": "S2", "approaches": 3}))
    assert (story_of(every, S2).approaches, story_of(every, S2).raced_items) == (3, ("T5", "T6"))
    assert story_of(every, S1).approaches is None and story_of(every, S1).raced_items == ()
    some = derive_build(
        KEY, [], SPEC, _marked_tests({"story": "S1", "approaches": 2, "items": ["T2"]})
    )
    assert story_of(some, S1).raced_items == ("T2",)


def _ended(name: str, number: int = 1) -> Recorded:
    ended = ev.ApproachEnded(
        number=number,
        approach=name,
        outcome=ev.ApproachOutcome.ERROR,
        cycles=0,
        seconds=0.0,
        commit=None,
        message="",
        smells=[],
        lines_added=0,
        lines_removed=0,
    )
    return at(ended)


def test_an_experiment_runs_until_every_approach_ended_and_is_raced_for_good() -> None:
    approaches = [ev.ApproachRecord(name=n) for n in ("a", "b")]
    started = at(
        ev.ExperimentStarted(
            number=1, red_commit="r1", concurrency=2, concurrency_note="", approaches=approaches
        )
    )
    a_ended, b_ended = _ended("a"), _ended("b")
    running = item_of(derived(at(red_ok()), started, a_ended), S1, "T1")
    assert (running.experiment, running.experiment_running, running.raced) == (1, True, True)
    waiting = item_of(derived(at(red_ok()), started, a_ended, b_ended), S1, "T1")
    assert (waiting.experiment, waiting.experiment_running) == (1, False)
    discarded = at(ev.ExperimentDiscarded(number=1, archived=[], dropped=[], note=""))
    after = item_of(derived(at(red_ok()), started, a_ended, b_ended, discarded), S1, "T1")
    assert (after.experiment, after.experiment_running, after.raced) == (None, False, True)
    # An approach of another experiment number ends nothing of this one.
    other = _ended("b", number=2)
    assert item_of(derived(at(red_ok()), started, a_ended, other), S1, "T1").experiment_running


@pytest.mark.parametrize(
    ("mark", "problem"),
    [
        ({"story": "S1", "approaches": 1}, "greater than or equal to 2"),
        ({"story": "S1", "approaches": 9}, "less than or equal to 8"),
        ({"story": "S1", "approaches": 2, "items": ["T5"]}, "T5 is not an item of story S1"),
        ({"story": "S9", "approaches": 2}, "story S9 has no test-list item"),
    ],
)
def test_a_mark_the_test_list_cannot_keep_is_refused(mark: dict[str, object], problem: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=problem):
        _marked_tests(mark)


def test_a_story_marked_twice_is_refused() -> None:
    from pydantic import ValidationError

    mark = {"story": "S1", "approaches": 2}
    with pytest.raises(ValidationError, match="marked for an experiment more than once"):
        TestList.model_validate({**TESTS.model_dump(mode="json"), "experiments": [mark, mark]})
