"""The transition table: `next_action(state)` for every state of the plan and design lanes.

States are built by hand (see `feature` below), so each row says exactly which facts lead to
which action.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from consort.core.artifacts.registry import ArtifactKind
from consort.core.config import GateMode
from consort.core.errors import ExitCode
from consort.core.machine import Action, next_action
from consort.core.state import (
    DESIGN_STEPS,
    ArtifactCondition,
    ArtifactState,
    DesignStep,
    Escalation,
    FeatureState,
    GateKind,
    GateState,
    GateStatus,
    State,
)
from consort.core.vocabulary import ActionKind, Lane, Role, Step

KEY = "F1-stock-visibility"
ACCEPTED = ArtifactCondition.ACCEPTED
MISSING = ArtifactCondition.MISSING


def path_of(key: str, kind: ArtifactKind) -> str:
    return f".consort/features/{key}/{kind.value}.json"


def feature(
    key: str = KEY,
    *,
    user_facing: bool = True,
    conditions: Mapping[ArtifactKind, ArtifactCondition] | None = None,
    default: ArtifactCondition = MISSING,
    failures: Mapping[Step, int] | None = None,
    feedback: Mapping[Step, str] | None = None,
    escalation: Escalation | None = None,
    gate: GateState | None = None,
    redo_feedback: str = "the product owner rejected it: split the layers",
    problem: str = "layers: Field required",
) -> FeatureState:
    """A feature whose design artifacts are all in `default` condition unless listed."""
    chosen = dict(conditions or {})
    artifacts = {}
    for step in DESIGN_STEPS:
        condition = chosen.get(step.artifact, default)
        artifacts[step.artifact] = ArtifactState(
            kind=step.artifact,
            condition=condition,
            path=path_of(key, step.artifact),
            current_hash=None if condition is MISSING else "c" * 64,
            accepted_hash="a" * 64 if condition is not MISSING else None,
            accepted_turn="0001-spec-author-spec" if condition is not MISSING else None,
            problem=problem if condition is ArtifactCondition.INVALID else None,
            feedback=redo_feedback if condition is ArtifactCondition.NEEDS_REDO else None,
        )
    return FeatureState(
        id=key,
        title="Stock visibility",
        user_facing=user_facing,
        artifacts=artifacts,
        failures=dict(failures or {}),
        feedback=dict(feedback or {}),
        escalation=escalation,
        design_gate=gate or GateState(GateKind.DESIGN),
    )


def state(
    *features: FeatureState,
    mode: GateMode = GateMode.INTERACTIVE,
    max_retries: int = 2,
) -> State:
    return State(features=tuple(features), gate_mode=mode, max_retries=max_retries)


def up_to(step: DesignStep, condition: ArtifactCondition) -> dict[ArtifactKind, ArtifactCondition]:
    """Every step before `step` accepted, `step` itself in `condition`, the rest missing."""
    index = DESIGN_STEPS.index(step)
    conditions = {s.artifact: ACCEPTED for s in DESIGN_STEPS[:index]}
    conditions[step.artifact] = condition
    return conditions


def approved(*, drifted: tuple[str, ...] = ()) -> GateState:
    return GateState(
        GateKind.DESIGN,
        GateStatus.APPROVED,
        approved_hashes={s.artifact.value: "a" * 64 for s in DESIGN_STEPS},
        drifted=drifted,
        actor="human",
        seq=40,
    )


STEP_IDS = [s.step.value for s in DESIGN_STEPS]


# ---- the plan lane -----------------------------------------------------------------------------


def test_no_features_asks_for_intake() -> None:
    action = next_action(state())
    assert action.kind is ActionKind.INTAKE_NEEDED
    assert action.lane is Lane.PLAN
    assert action.stops and action.exit_code is ExitCode.OK
    assert action.command is not None and action.command.startswith("consort intake feature")


def test_unknown_feature_is_named() -> None:
    action = next_action(state(feature()), "F9-nope")
    assert action.kind is ActionKind.INTAKE_NEEDED
    assert "F9-nope" in action.reason
    assert action.stops


# ---- each design step, each artifact condition --------------------------------------------------


@pytest.mark.parametrize("step", DESIGN_STEPS, ids=STEP_IDS)
def test_missing_artifact_runs_its_role_first_attempt(step: DesignStep) -> None:
    action = next_action(state(feature(conditions=up_to(step, MISSING))))
    assert action == Action(
        ActionKind.RUN_TURN,
        Lane.DESIGN,
        f"no {step.artifact.value} yet",
        feature=KEY,
        role=step.role,
        step=step.step,
        artifact=step.artifact,
        attempt=1,
        feedback=None,
    )
    assert not action.stops


@pytest.mark.parametrize("step", DESIGN_STEPS, ids=STEP_IDS)
def test_needs_redo_runs_its_role_with_the_feedback(step: DesignStep) -> None:
    note = f"the product owner rejected it: rethink the {step.artifact.value}"
    action = next_action(
        state(feature(conditions=up_to(step, ArtifactCondition.NEEDS_REDO), redo_feedback=note))
    )
    assert action.kind is ActionKind.RUN_TURN
    assert (action.role, action.step, action.artifact) == (step.role, step.step, step.artifact)
    assert action.attempt == 1
    assert action.feedback == note
    assert note in action.reason


@pytest.mark.parametrize("step", DESIGN_STEPS, ids=STEP_IDS)
def test_pending_copy_restores_the_accepted_output(step: DesignStep) -> None:
    action = next_action(state(feature(conditions=up_to(step, ArtifactCondition.PENDING_COPY))))
    assert action.kind is ActionKind.RESTORE_ARTIFACT
    assert action.artifact is step.artifact
    assert action.feature == KEY
    assert action.role is None  # no agent involved
    assert path_of(KEY, step.artifact) in action.reason
    assert not action.stops


@pytest.mark.parametrize("step", DESIGN_STEPS, ids=STEP_IDS)
def test_hand_edit_is_recorded(step: DesignStep) -> None:
    action = next_action(state(feature(conditions=up_to(step, ArtifactCondition.HAND_EDITED))))
    assert action.kind is ActionKind.RECORD_HAND_EDIT
    assert action.artifact is step.artifact
    assert path_of(KEY, step.artifact) in action.reason
    assert not action.stops


@pytest.mark.parametrize("step", DESIGN_STEPS, ids=STEP_IDS)
def test_invalid_artifact_stops_for_a_person(step: DesignStep) -> None:
    action = next_action(
        state(
            feature(
                conditions=up_to(step, ArtifactCondition.INVALID),
                problem="invalid JSON at line 1 column 2",
            )
        )
    )
    assert action.kind is ActionKind.FIX_ARTIFACT
    assert action.artifact is step.artifact
    assert action.stops and action.exit_code is ExitCode.ERROR
    assert path_of(KEY, step.artifact) in action.reason
    assert "invalid JSON at line 1 column 2" in action.reason
    assert action.command is not None and path_of(KEY, step.artifact) in action.command


@pytest.mark.parametrize("index", range(len(DESIGN_STEPS) - 1), ids=STEP_IDS[:-1])
def test_accepted_artifact_moves_on_to_the_next_step(index: int) -> None:
    step, following = DESIGN_STEPS[index], DESIGN_STEPS[index + 1]
    action = next_action(state(feature(conditions=up_to(step, ACCEPTED))))
    assert action.kind is ActionKind.RUN_TURN
    assert (action.role, action.step) == (following.role, following.step)


def test_the_first_unfinished_step_wins_over_later_ones() -> None:
    # An invalid or hand-edited later artifact waits until the earlier step is done.
    conditions = {
        ArtifactKind.FEATURE_SPEC: ACCEPTED,
        ArtifactKind.ARCHITECTURE: MISSING,
        ArtifactKind.DB_DESIGN: ArtifactCondition.INVALID,
        ArtifactKind.TEST_LIST: ArtifactCondition.HAND_EDITED,
    }
    action = next_action(state(feature(conditions=conditions)))
    assert (action.kind, action.step) == (ActionKind.RUN_TURN, Step.ARCHITECTURE)


def test_design_steps_run_in_the_documented_order() -> None:
    assert [(s.role, s.step, s.artifact) for s in DESIGN_STEPS] == [
        (Role.SPEC_AUTHOR, Step.SPEC, ArtifactKind.FEATURE_SPEC),
        (Role.ARCHITECT, Step.ARCHITECTURE, ArtifactKind.ARCHITECTURE),
        (Role.DBA, Step.DB_DESIGN, ArtifactKind.DB_DESIGN),
        (Role.TEST_STRATEGIST, Step.TEST_LIST, ArtifactKind.TEST_LIST),
        (Role.UX_DESIGNER, Step.UX, ArtifactKind.UX),
    ]


# ---- failed attempts and escalations ------------------------------------------------------------


@pytest.mark.parametrize("max_retries", [1, 2, 5])
@pytest.mark.parametrize("step", DESIGN_STEPS, ids=STEP_IDS)
def test_failures_within_the_retries_run_the_next_attempt(
    step: DesignStep, max_retries: int
) -> None:
    for failures in range(1, max_retries + 1):
        errors = f"{step.artifact.value}: invalid JSON (attempt {failures})"
        action = next_action(
            state(
                feature(
                    conditions=up_to(step, MISSING),
                    failures={step.step: failures},
                    feedback={step.step: errors},
                ),
                max_retries=max_retries,
            )
        )
        assert action.kind is ActionKind.RUN_TURN
        assert action.step is step.step
        assert action.attempt == failures + 1
        assert action.feedback == errors
        assert f"{failures} failed attempts" in action.reason


@pytest.mark.parametrize("max_retries", [0, 1, 2])
@pytest.mark.parametrize("step", DESIGN_STEPS, ids=STEP_IDS)
def test_failures_beyond_the_retries_escalate(step: DesignStep, max_retries: int) -> None:
    action = next_action(
        state(
            feature(
                conditions=up_to(step, MISSING),
                failures={step.step: max_retries + 1},
                feedback={step.step: "no output written"},
            ),
            max_retries=max_retries,
        )
    )
    assert action.kind is ActionKind.ESCALATE
    assert (action.role, action.step) == (step.role, step.step)
    assert action.feedback == "no output written"
    assert f"failed {max_retries + 1} attempts" in action.reason
    assert not action.stops  # the orchestrator records it, then stops at AWAIT_ESCALATION


def test_failure_feedback_takes_precedence_over_the_rejection_note() -> None:
    step = DESIGN_STEPS[1]
    action = next_action(
        state(
            feature(
                conditions=up_to(step, ArtifactCondition.NEEDS_REDO),
                failures={step.step: 1},
                feedback={step.step: "architecture: layers: Field required"},
            )
        )
    )
    assert action.attempt == 2
    assert action.feedback == "architecture: layers: Field required"


def test_failures_of_another_step_do_not_count() -> None:
    action = next_action(
        state(
            feature(conditions=up_to(DESIGN_STEPS[2], MISSING), failures={Step.SPEC: 9}),
            max_retries=2,
        )
    )
    assert (action.kind, action.step, action.attempt) == (ActionKind.RUN_TURN, Step.DB_DESIGN, 1)


def test_open_escalation_waits_for_a_person() -> None:
    escalation = Escalation(Step.ARCHITECTURE, "architect failed 3 attempts", seq=17)
    action = next_action(
        state(feature(conditions=up_to(DESIGN_STEPS[1], MISSING), escalation=escalation))
    )
    assert action.kind is ActionKind.AWAIT_ESCALATION
    assert action.stops and action.exit_code is ExitCode.ESCALATION
    assert action.step is Step.ARCHITECTURE
    assert "architect failed 3 attempts" in action.reason
    assert action.command is not None and action.command.startswith(f"consort retry {KEY}")


def test_escalation_waits_even_when_the_design_is_complete() -> None:
    escalation = Escalation(Step.UX, "the proxy policy rejects the design", seq=30)
    action = next_action(state(feature(default=ACCEPTED, escalation=escalation)))
    assert action.kind is ActionKind.AWAIT_ESCALATION


# ---- the design gate ----------------------------------------------------------------------------


def test_complete_design_waits_at_the_gate_in_interactive_mode() -> None:
    action = next_action(state(feature(default=ACCEPTED)))
    assert action.kind is ActionKind.AWAIT_GATE
    assert action.gate is GateKind.DESIGN
    assert action.lane is Lane.DESIGN
    assert action.stops and action.exit_code is ExitCode.OK
    assert action.command == f"consort approve design {KEY}"


def test_complete_design_goes_to_the_proxy_in_proxy_mode() -> None:
    action = next_action(state(feature(default=ACCEPTED), mode=GateMode.PROXY))
    assert action.kind is ActionKind.PROXY_GATE
    assert action.gate is GateKind.DESIGN
    assert action.feature == KEY
    assert not action.stops


def test_rejected_design_that_was_redone_waits_at_the_gate_again() -> None:
    gate = GateState(GateKind.DESIGN, GateStatus.REJECTED, actor="human", seq=33)
    action = next_action(state(feature(default=ACCEPTED, gate=gate)))
    assert action.kind is ActionKind.AWAIT_GATE


def test_rejected_design_redoes_the_sent_back_artifact() -> None:
    gate = GateState(GateKind.DESIGN, GateStatus.REJECTED, actor="human", seq=33)
    conditions = {s.artifact: ArtifactCondition.NEEDS_REDO for s in DESIGN_STEPS[1:]}
    action = next_action(state(feature(default=ACCEPTED, conditions=conditions, gate=gate)))
    assert (action.kind, action.step) == (ActionKind.RUN_TURN, Step.ARCHITECTURE)


DESIGN_LANE_KINDS = {
    ActionKind.RESTORE_ARTIFACT,
    ActionKind.RECORD_HAND_EDIT,
    ActionKind.INTEGRITY_STOP,
}


def test_approved_design_hands_over_to_the_build_lane() -> None:
    action = next_action(state(feature(default=ACCEPTED, gate=approved())))
    # What the build lane does first is its own table's business; the design lane is over:
    # no design turn runs again and the design gate is not asked for again.
    assert action.lane is Lane.BUILD
    assert action.kind not in DESIGN_LANE_KINDS
    assert action.gate is not GateKind.DESIGN
    assert action.step is None or action.step.is_build
    assert action.exit_code is not ExitCode.INTEGRITY


def test_drifted_approval_is_an_integrity_stop() -> None:
    drifted = (path_of(KEY, ArtifactKind.ARCHITECTURE),)
    action = next_action(state(feature(default=ACCEPTED, gate=approved(drifted=drifted))))
    assert action.kind is ActionKind.INTEGRITY_STOP
    assert action.stops and action.exit_code is ExitCode.INTEGRITY
    assert drifted[0] in action.reason
    assert action.command is not None and f"consort approve design {KEY}" in action.command


def test_drift_of_a_later_feature_stops_before_work_on_an_earlier_one() -> None:
    first = feature("F1-first")  # everything still to do
    drifted = feature(
        "F2-second",
        default=ACCEPTED,
        gate=approved(drifted=(path_of("F2-second", ArtifactKind.TEST_LIST),)),
    )
    action = next_action(state(first, drifted))
    assert action.kind is ActionKind.INTEGRITY_STOP
    assert action.feature == "F2-second"
    # Fail closed: even scoped to the first feature, another feature's drift stops the work.
    assert next_action(state(first, drifted), "F1-first").kind is ActionKind.INTEGRITY_STOP


def test_drift_stops_even_while_an_escalation_is_open_elsewhere() -> None:
    waiting = feature("F1-first", escalation=Escalation(Step.SPEC, "stuck", seq=3))
    drifted = feature("F2-second", default=ACCEPTED, gate=approved(drifted=("x.json",)))
    assert next_action(state(waiting, drifted)).kind is ActionKind.INTEGRITY_STOP


# ---- UX only for user-facing features ---------------------------------------------------------


def test_ux_step_runs_for_a_user_facing_feature() -> None:
    conditions = {s.artifact: ACCEPTED for s in DESIGN_STEPS[:4]}
    action = next_action(state(feature(user_facing=True, conditions=conditions)))
    assert (action.kind, action.role, action.step) == (
        ActionKind.RUN_TURN,
        Role.UX_DESIGNER,
        Step.UX,
    )


def test_ux_step_is_skipped_for_other_features() -> None:
    conditions = {s.artifact: ACCEPTED for s in DESIGN_STEPS[:4]}
    action = next_action(state(feature(user_facing=False, conditions=conditions)))
    assert action.kind is ActionKind.AWAIT_GATE


def test_a_broken_ux_file_does_not_matter_when_there_is_no_ux_step() -> None:
    conditions = {s.artifact: ACCEPTED for s in DESIGN_STEPS[:4]}
    conditions[ArtifactKind.UX] = ArtifactCondition.INVALID
    action = next_action(state(feature(user_facing=False, conditions=conditions)))
    assert action.kind is ActionKind.AWAIT_GATE


# ---- several features ---------------------------------------------------------------------------


def test_features_are_served_in_order() -> None:
    first = feature("F1-first", default=ACCEPTED)  # waits at its gate
    second = feature("F2-second")
    action = next_action(state(first, second))
    assert (action.kind, action.feature) == (ActionKind.AWAIT_GATE, "F1-first")


def test_feature_filter_picks_that_feature() -> None:
    first = feature("F1-first", default=ACCEPTED)
    second = feature("F2-second")
    action = next_action(state(first, second), "F2-second")
    assert (action.kind, action.feature, action.step) == (
        ActionKind.RUN_TURN,
        "F2-second",
        Step.SPEC,
    )


# ---- purity -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "subject",
    [
        state(),
        state(feature()),
        state(feature(conditions=up_to(DESIGN_STEPS[2], ArtifactCondition.PENDING_COPY))),
        state(feature(default=ACCEPTED), mode=GateMode.PROXY),
        state(feature(default=ACCEPTED, gate=approved(drifted=("a.json",)))),
        state(feature(conditions=up_to(DESIGN_STEPS[1], MISSING), failures={Step.ARCHITECTURE: 3})),
    ],
    ids=["empty", "fresh", "pending-copy", "proxy", "drifted", "escalate"],
)
def test_same_state_gives_the_same_action(subject: State) -> None:
    copy = replace(subject, features=tuple(replace(f) for f in subject.features))
    first = next_action(subject)
    assert next_action(subject) == first
    assert next_action(copy) == first
    assert subject == copy  # deciding changed nothing


def test_action_exit_codes_follow_the_contract() -> None:
    expected = {
        ActionKind.INTAKE_NEEDED: ExitCode.OK,
        ActionKind.FIX_ARTIFACT: ExitCode.ERROR,
        ActionKind.AWAIT_ESCALATION: ExitCode.ESCALATION,
        ActionKind.AWAIT_GATE: ExitCode.OK,
        ActionKind.AWAIT_EXPERIMENT: ExitCode.OK,
        ActionKind.INTEGRITY_STOP: ExitCode.INTEGRITY,
        ActionKind.NOT_AVAILABLE: ExitCode.OK,
        ActionKind.DONE: ExitCode.OK,
    }
    for kind in ActionKind:
        action = Action(kind, Lane.DESIGN, "why")
        assert action.stops is (kind in expected)
        assert action.exit_code is expected.get(kind, ExitCode.OK)
