"""Where each gate stands, and the gate commands' refusal of a gate that is not open: the phase
it is in and what to do instead. The phases agree with the transition table: a gate is open
exactly when `next_action` waits on it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from consort.core.config import GateMode
from consort.core.errors import ExitCode, UsageError
from consort.core.gate_phase import (
    GatePhase,
    deploy_phase,
    design_phase,
    promote_phase,
    story_phase,
)
from consort.core.machine import next_action
from consort.core.state import (
    ArtifactCondition,
    ArtifactKind,
    Escalation,
    FeatureState,
    GateKind,
    GateState,
    GateStatus,
    ItemStage,
    State,
)
from consort.core.vocabulary import ActionKind, Step
from consort.lanes.gate_checks import require_open
from tests.unit.core.test_machine_build import (
    DONE,
    S1,
    S2,
    approved_feature,
    build,
    item,
    merged,
    story,
)

NOT_REACHED, OPEN, APPROVED = GatePhase.NOT_REACHED, GatePhase.OPEN, GatePhase.APPROVED


def designing(condition: ArtifactCondition = ArtifactCondition.ACCEPTED) -> FeatureState:
    """A feature whose design is not approved; its test list is in `condition`."""
    feature = approved_feature(None)
    artifacts = dict(feature.artifacts)
    artifacts[ArtifactKind.TEST_LIST] = replace(
        artifacts[ArtifactKind.TEST_LIST], condition=condition
    )
    return replace(feature, artifacts=artifacts, design_gate=GateState(GateKind.DESIGN))


def rejected(condition: ArtifactCondition) -> FeatureState:
    gate = GateState(GateKind.DESIGN, GateStatus.REJECTED, actor="human", seq=12)
    return replace(designing(condition), design_gate=gate)


@pytest.mark.parametrize(
    ("feature", "phase"),
    [
        (designing(ArtifactCondition.MISSING), NOT_REACHED),
        (designing(ArtifactCondition.INVALID), NOT_REACHED),
        (designing(), OPEN),
        (designing(ArtifactCondition.HAND_EDITED), OPEN),
        (rejected(ArtifactCondition.NEEDS_REDO), GatePhase.REJECTED),
        (rejected(ArtifactCondition.ACCEPTED), OPEN),  # redone: open again
        (approved_feature(build()), APPROVED),
        (approved_feature(build(), drifted=("x.json",)), GatePhase.DRIFTED),
    ],
)
def test_design_phase(feature: FeatureState, phase: GatePhase) -> None:
    assert design_phase(feature) is phase


DEPLOYED = build(merged(S1), deployed=True, deploy_gate=GateStatus.APPROVED)
DONE_AND_PROMOTED = replace(DEPLOYED, promote_gate=GateStatus.APPROVED, promoted=True)
NR = NOT_REACHED


@pytest.mark.parametrize(
    ("lane", "design", "acceptance", "deploy", "promote"),
    [
        (build(story(S1, item("T1"), created=False)), APPROVED, NR, NR, NR),
        (build(story(S1, item("T1", DONE), item("T2", ItemStage.GREEN))), APPROVED, NR, NR, NR),
        (build(story(S1, item("T1", DONE))), APPROVED, OPEN, NR, NR),
        (build(story(S1, item("T1", DONE), gate=GateStatus.APPROVED)), APPROVED, APPROVED, NR, NR),
        (build(merged(S1), deployed=True), APPROVED, APPROVED, OPEN, NR),
        (DEPLOYED, APPROVED, APPROVED, APPROVED, OPEN),
        (DONE_AND_PROMOTED, APPROVED, APPROVED, APPROVED, APPROVED),
    ],
)
def test_build_phases(
    lane: object, design: GatePhase, acceptance: GatePhase, deploy: GatePhase, promote: GatePhase
) -> None:
    feature = approved_feature(lane)  # type: ignore[arg-type]
    assert feature.build is not None
    assert design_phase(feature) is design
    assert story_phase(feature.build.stories[0]) is acceptance
    assert deploy_phase(feature.build) is deploy
    assert promote_phase(feature.build) is promote


FEATURES = [
    designing(ArtifactCondition.MISSING),
    designing(),
    rejected(ArtifactCondition.NEEDS_REDO),
    rejected(ArtifactCondition.ACCEPTED),
    approved_feature(build(story(S1, item("T1", ItemStage.GREEN)))),
    approved_feature(build(story(S1, item("T1", DONE)), story(S2, item("T2"), created=False))),
    approved_feature(build(merged(S1), story(S2, item("T2", DONE)))),
    approved_feature(build(merged(S1), deployed=True)),
    approved_feature(build(merged(S1), deployed=True, deploy_gate=GateStatus.APPROVED)),
]


@pytest.mark.parametrize("feature", FEATURES)
def test_a_gate_is_open_exactly_when_the_transition_table_waits_on_it(
    feature: FeatureState,
) -> None:
    action = next_action(State((feature,), GateMode.INTERACTIVE, max_retries=2))
    waits = {action.gate} if action.kind is ActionKind.AWAIT_GATE else set()
    opened = set()
    if design_phase(feature).is_open:
        opened.add(GateKind.DESIGN)
    if feature.build is not None:
        if any(story_phase(s).is_open for s in feature.build.stories if not s.merged):
            opened.add(GateKind.STORY)
        if deploy_phase(feature.build).is_open:
            opened.add(GateKind.DEPLOY)
        if promote_phase(feature.build).is_open:
            opened.add(GateKind.PROMOTE)
    assert opened == waits


def refusal(feature: FeatureState, gate: GateKind, story_index: int | None = None) -> UsageError:
    chosen = None
    if story_index is not None:
        assert feature.build is not None
        chosen = feature.build.stories[story_index]
    with pytest.raises(UsageError) as caught:
        require_open(feature, gate, chosen)
    assert caught.value.code is ExitCode.USAGE
    assert caught.value.fix  # always says what can be done instead
    return caught.value


PROMOTED = approved_feature(
    build(
        merged(S1),
        deployed=True,
        deploy_gate=GateStatus.APPROVED,
        promote_gate=GateStatus.APPROVED,
        promoted=True,
    )
)


def test_approving_an_approved_design_is_refused_while_it_is_built() -> None:
    refused = refusal(
        approved_feature(build(story(S1, item("T1", ItemStage.GREEN)))), GateKind.DESIGN
    )
    assert "already approved (by the human, event 9); its build is under way" in refused.message
    assert refused.fix is not None and "consort drive --feature F1" in refused.fix


def test_a_promoted_design_cannot_be_approved_or_sent_back() -> None:
    refused = refusal(PROMOTED, GateKind.DESIGN)
    assert "is promoted into main" in refused.message
    assert refused.fix is not None and "consort intake feature" in refused.fix


def test_a_design_not_complete_is_not_reached() -> None:
    refused = refusal(designing(ArtifactCondition.MISSING), GateKind.DESIGN)
    assert "the design gate of F1-stock-visibility is not reached" in refused.message
    assert "test-list.json: missing" in refused.message


def test_a_rejected_design_waits_for_its_redo() -> None:
    refused = refusal(rejected(ArtifactCondition.NEEDS_REDO), GateKind.DESIGN)
    assert "is rejected (event 12); the design is being redone" in refused.message


def test_a_design_escalation_is_named_instead_of_the_drive() -> None:
    feature = replace(
        designing(ArtifactCondition.MISSING),
        escalation=Escalation(Step.TEST_LIST, "failed 3 attempts", 20),
    )
    assert "escalation" in (refusal(feature, GateKind.DESIGN).fix or "")


def test_a_story_is_accepted_once() -> None:
    unfinished = approved_feature(build(story(S1, item("T1", DONE), item("T2", ItemStage.GREEN))))
    assert "(unfinished: T2 (green))" in refusal(unfinished, GateKind.STORY, 0).message
    accepted = approved_feature(build(story(S1, item("T1", DONE), gate=GateStatus.APPROVED)))
    refused = refusal(accepted, GateKind.STORY, 0)
    assert "is already accepted" in refused.message and "merges it" in (refused.fix or "")
    assert "merged into feature/" in refusal(PROMOTED, GateKind.STORY, 0).message


def test_the_release_gates_in_order() -> None:
    building = approved_feature(build(merged(S1), story(S2, item("T2", ItemStage.RED))))
    refused = refusal(building, GateKind.DEPLOY)
    assert "the deploy gate of F1-stock-visibility is not reached" in refused.message
    assert "stories not merged yet: S2-stock-by-location" in refused.message
    deploy_open = approved_feature(build(merged(S1), deployed=True))
    refused = refusal(deploy_open, GateKind.PROMOTE)
    assert "deploy gate is still open" in refused.message
    assert refused.fix == "decide it first: `consort approve deploy F1`"
    deployed = approved_feature(build(merged(S1), deployed=True, deploy_gate=GateStatus.APPROVED))
    refused = refusal(deployed, GateKind.DEPLOY)
    assert "already approved" in refused.message
    assert refused.fix == "the promote gate is next: `consort approve promote F1`"
    assert "is promoted into main" in refusal(PROMOTED, GateKind.PROMOTE).message
    assert "is promoted" in refusal(PROMOTED, GateKind.DEPLOY).message


@pytest.mark.parametrize(
    ("feature", "gate", "index"),
    [
        (designing(), GateKind.DESIGN, None),
        (approved_feature(build(), drifted=("a.json",)), GateKind.DESIGN, None),
        (approved_feature(build(story(S1, item("T1", DONE)))), GateKind.STORY, 0),
        (approved_feature(build(merged(S1), deployed=True)), GateKind.DEPLOY, None),
    ],
)
def test_an_open_gate_is_let_through(
    feature: FeatureState, gate: GateKind, index: int | None
) -> None:
    chosen = feature.build.stories[index] if feature.build and index is not None else None
    require_open(feature, gate, chosen)


def test_status_shows_gates_not_reached_as_not_reached(tmp_path: object) -> None:
    from pathlib import Path

    from consort.app.status import collect
    from consort.core.project import Project

    root = Path(str(tmp_path))
    (root / "consort.toml").write_text("")
    building = approved_feature(build(story(S1, item("T1", ItemStage.GREEN))))
    report = collect(Project(root), State((building,), GateMode.INTERACTIVE, max_retries=2))
    (line,) = report.features
    assert (line.design_gate, line.deploy_gate, line.promote_gate) == (
        "approved",
        "not reached",
        "not reached",
    )
    (shown,) = report.stories
    assert shown.gate == "not reached"
    report = collect(
        Project(root),
        State((designing(ArtifactCondition.MISSING),), GateMode.INTERACTIVE, max_retries=2),
    )
    assert report.features[0].design_gate == "not reached"
