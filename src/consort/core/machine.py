"""`next_action(state)`: the transition table. Pure: the same State always gives the same Action.

Agents never choose, skip or reorder a step; this function does, from what is on disk.
"""

from __future__ import annotations

from dataclasses import dataclass

from consort.core.artifacts.registry import ArtifactKind
from consort.core.config import GateMode
from consort.core.errors import ExitCode
from consort.core.state import (
    ArtifactCondition,
    BuildState,
    FeatureState,
    GateKind,
    GateStatus,
    ItemStage,
    ItemState,
    State,
    StoryState,
)
from consort.core.vocabulary import ActionKind, Lane, Role, Step

STOPS: dict[ActionKind, ExitCode] = {
    ActionKind.INTAKE_NEEDED: ExitCode.OK,
    ActionKind.FIX_ARTIFACT: ExitCode.ERROR,
    ActionKind.AWAIT_ESCALATION: ExitCode.ESCALATION,
    ActionKind.AWAIT_GATE: ExitCode.OK,
    ActionKind.AWAIT_EXPERIMENT: ExitCode.OK,
    ActionKind.INTEGRITY_STOP: ExitCode.INTEGRITY,
    ActionKind.NOT_AVAILABLE: ExitCode.OK,
    ActionKind.DONE: ExitCode.OK,
}


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    lane: Lane
    reason: str
    feature: str | None = None
    role: Role | None = None
    step: Step | None = None
    artifact: ArtifactKind | None = None
    attempt: int = 0
    feedback: str | None = None
    gate: GateKind | None = None
    command: str | None = None  # what the human runs next, for stops
    story: str | None = None  # "S1-file-stock", for build-lane actions
    item: str | None = None  # "T3"

    @property
    def stops(self) -> bool:
        return self.kind in STOPS

    @property
    def exit_code(self) -> ExitCode:
        return STOPS.get(self.kind, ExitCode.OK)

    def describe(self) -> str:
        parts = [self.kind.value]
        if self.feature:
            parts.append("/".join(p for p in (self.feature, self.story, self.item) if p))
        if self.role:
            parts.append(f"{self.role.value}/{self.step.value if self.step else '-'}")
        if self.attempt:
            parts.append(f"attempt {self.attempt}")
        return " ".join(parts)


def next_action(state: State, feature: str | None = None) -> Action:
    """The one next step for the project, or for one feature when `feature` is given."""
    features = [f for f in state.features if feature is None or f.id == feature]
    if feature is not None and not features:
        return Action(
            ActionKind.INTAKE_NEEDED,
            Lane.PLAN,
            f"no feature {feature!r}",
            command="consort status",
        )
    if not features:
        return Action(
            ActionKind.INTAKE_NEEDED,
            Lane.PLAN,
            "no feature requests yet",
            command="consort intake feature --file request.md",
        )
    # Integrity first, across every feature of the project (not only those in scope): a drifted
    # gate anywhere stops everything.
    for each in state.features:
        if each.design_gate.status is GateStatus.APPROVED and each.design_gate.drifted:
            return Action(
                ActionKind.INTEGRITY_STOP,
                Lane.DESIGN,
                f"approved design of {each.id} changed since approval: "
                + ", ".join(each.design_gate.drifted),
                feature=each.id,
                gate=GateKind.DESIGN,
                command=f"consort approve design {each.id}  (or restore the files)",
            )
    for each in features:
        action = _feature_action(state, each)
        if action.kind is not ActionKind.DONE:
            return action
    return Action(ActionKind.DONE, Lane.DONE, "every feature is done")


def _feature_action(state: State, feature: FeatureState) -> Action:
    if feature.escalation is not None:
        return Action(
            ActionKind.AWAIT_ESCALATION,
            Lane.BUILD if feature.escalation.step.is_build else Lane.DESIGN,
            f"{feature.escalation.step.value}: {feature.escalation.reason}",
            feature=feature.id,
            step=feature.escalation.step,
            command=f'consort retry {feature.id} --note "..."',
        )
    gate = feature.design_gate
    if gate.status is not GateStatus.APPROVED:
        design = _design_action(state, feature)
        if design is not None:
            return design
        if state.gate_mode is GateMode.PROXY:
            return Action(
                ActionKind.PROXY_GATE,
                Lane.DESIGN,
                "design complete; the human proxy decides (gates mode proxy)",
                feature=feature.id,
                gate=GateKind.DESIGN,
            )
        return Action(
            ActionKind.AWAIT_GATE,
            Lane.DESIGN,
            "design complete; waiting for the product owner's approval",
            feature=feature.id,
            gate=GateKind.DESIGN,
            command=f"consort approve design {feature.id}",
        )
    if feature.build is None:
        return Action(
            ActionKind.FIX_ARTIFACT,
            Lane.BUILD,
            "the approved spec or test list cannot be read",
            feature=feature.id,
            command="consort verify",
        )
    return _build_action(state, feature, feature.build)


def _short(feature: str) -> str:
    return feature.split("-", 1)[0]


def _build_action(  # noqa: PLR0911 -- one return per transition: it reads as the table it is
    state: State, feature: FeatureState, build: BuildState
) -> Action:
    if not build.created:
        return Action(
            ActionKind.CREATE_FEATURE_BRANCH,
            Lane.BUILD,
            f"design approved: create {build.feature_branch} and its database",
            feature=feature.id,
        )
    for story in build.stories:
        if story.merged:
            continue
        if not story.created:
            return Action(
                ActionKind.CREATE_STORY_BRANCH,
                Lane.BUILD,
                f"start story {story.key}: create {story.branch}, its database and worktree",
                feature=feature.id,
                story=story.key,
            )
        for item in story.items:
            if item.stage is not ItemStage.DONE:
                return _item_action(state, feature, story, item)
        if story.gate is GateStatus.APPROVED:
            return Action(
                ActionKind.MERGE_STORY,
                Lane.BUILD,
                f"story {story.key} accepted: merge it into {build.feature_branch}",
                feature=feature.id,
                story=story.key,
            )
        subject = f"{_short(feature.id)}/{story.id}"
        if state.gate_mode is GateMode.PROXY:
            return Action(
                ActionKind.PROXY_GATE,
                Lane.BUILD,
                f"every cycle of {story.key} is done; the human proxy decides acceptance",
                feature=feature.id,
                story=story.key,
                gate=GateKind.STORY,
            )
        return Action(
            ActionKind.AWAIT_GATE,
            Lane.BUILD,
            f"every cycle of {story.key} is done; waiting for the story's acceptance",
            feature=feature.id,
            story=story.key,
            gate=GateKind.STORY,
            command=f"consort approve story {subject}",
        )
    return _release_action(state, feature, build)


def _gate_action(
    state: State, feature: FeatureState, gate: GateKind, lane: Lane, why: str
) -> Action:
    if state.gate_mode is GateMode.PROXY:
        return Action(
            ActionKind.PROXY_GATE,
            lane,
            f"{why}; the human proxy decides",
            feature=feature.id,
            gate=gate,
        )
    return Action(
        ActionKind.AWAIT_GATE,
        lane,
        f"{why}; waiting for the product owner",
        feature=feature.id,
        gate=gate,
        command=f"consort approve {gate.value} {_short(feature.id)}",
    )


def _release_action(state: State, feature: FeatureState, build: BuildState) -> Action:
    """The deploy lane (prove, then the deploy gate) and the promote lane (gate, then promote)."""
    if build.promoted:
        return Action(ActionKind.DONE, Lane.DONE, f"{feature.id} is promoted", feature=feature.id)
    if not build.deployed:
        return Action(
            ActionKind.DEPLOY,
            Lane.DEPLOY,
            "every story is merged: prove the migrations, the suite and the running app on a "
            "throwaway copy of the parent database",
            feature=feature.id,
        )
    if build.deploy_gate is not GateStatus.APPROVED:
        return _gate_action(state, feature, GateKind.DEPLOY, Lane.DEPLOY, "the deploy proof holds")
    if build.promote_gate is not GateStatus.APPROVED:
        return _gate_action(
            state, feature, GateKind.PROMOTE, Lane.PROMOTE, "deploy approved; promote next"
        )
    return Action(
        ActionKind.PROMOTE,
        Lane.PROMOTE,
        f"promote approved: merge {build.feature_branch} into {build.base_branch} and migrate it",
        feature=feature.id,
    )


_STAGE_TURNS: dict[ItemStage, tuple[Role, Step]] = {
    ItemStage.RED: (Role.NAVIGATOR, Step.RED),
    ItemStage.GREEN: (Role.DRIVER, Step.GREEN),
    ItemStage.REVIEW: (Role.NAVIGATOR, Step.REVIEW),
    ItemStage.REFACTOR: (Role.DRIVER, Step.REFACTOR),
}


def _race(feature: FeatureState, story: StoryState, item: ItemState, reason: str) -> Action:
    return Action(
        ActionKind.RUN_EXPERIMENT,
        Lane.BUILD,
        reason,
        feature=feature.id,
        story=story.key,
        item=item.id,
        attempt=story.approaches or 0,  # how many approaches
    )


def _item_action(state: State, feature: FeatureState, story: StoryState, item: ItemState) -> Action:
    subject = f"{_short(feature.id)}/{story.id}"
    marked = story.approaches is not None and item.id in story.raced_items
    if item.experiment is not None and item.experiment_running and marked:
        return _race(feature, story, item, f"resume the experiment on {item.id}'s GREEN")
    if item.experiment is not None:
        if item.experiment_running:
            reason = f"an experiment on {item.id}'s GREEN was stopped before every approach ended"
            command = f"consort experiment {subject} (resumes it)"
        else:
            reason = f"an experiment raced approaches to {item.id}'s GREEN; a person selects one"
            command = (
                f"consort experiment compare {subject}, then "
                f"consort experiment select {subject} NAME"
            )
        return Action(
            ActionKind.AWAIT_EXPERIMENT,
            Lane.BUILD,
            reason,
            feature=feature.id,
            story=story.key,
            item=item.id,
            command=command,
        )
    if marked and item.stage is ItemStage.GREEN and item.failures == 0 and not item.raced:
        reason = f"the design marks {story.id} for {story.approaches} approaches: race them"
        return _race(feature, story, item, f"{item.id}: {reason}")
    role, step = _STAGE_TURNS[item.stage]
    limit = state.max_retries
    if item.stage is ItemStage.GREEN:
        limit = state.repair_attempts
        if item.failures > 0:
            step = Step.REPAIR
    if item.failures > limit:
        return Action(
            ActionKind.ESCALATE,
            Lane.BUILD,
            f"{role.value} failed {item.failures} attempts at {item.stage.value} of {item.id}",
            feature=feature.id,
            story=story.key,
            item=item.id,
            role=role,
            step=step,
            feedback=item.feedback,
        )
    reason = {
        ItemStage.RED: f"{item.id} ({item.title}): write the failing test",
        ItemStage.GREEN: f"{item.id}: make the new test pass with the least code",
        ItemStage.REVIEW: f"{item.id}: review the change",
        ItemStage.REFACTOR: f"{item.id}: refactor as the review asks",
    }[item.stage]
    if item.failures:
        reason += f" (attempt {item.failures + 1})"
    return Action(
        ActionKind.RUN_TURN,
        Lane.BUILD,
        reason,
        feature=feature.id,
        story=story.key,
        item=item.id,
        role=role,
        step=step,
        attempt=item.failures + 1,
        feedback=item.feedback,
    )


def _design_action(state: State, feature: FeatureState) -> Action | None:
    """The first design step that is not done, or None when the design is complete."""
    for step in feature.steps():
        artifact = feature.artifacts[step.artifact]
        condition = artifact.condition
        if condition is ArtifactCondition.ACCEPTED:
            continue
        if condition is ArtifactCondition.PENDING_COPY:
            return Action(
                ActionKind.RESTORE_ARTIFACT,
                Lane.DESIGN,
                f"{artifact.path} was accepted but not written (interrupted): restore it",
                feature=feature.id,
                artifact=step.artifact,
            )
        if condition is ArtifactCondition.HAND_EDITED:
            return Action(
                ActionKind.RECORD_HAND_EDIT,
                Lane.DESIGN,
                f"{artifact.path} was edited by hand: record the edit",
                feature=feature.id,
                artifact=step.artifact,
            )
        if condition is ArtifactCondition.INVALID:
            return Action(
                ActionKind.FIX_ARTIFACT,
                Lane.DESIGN,
                f"{artifact.path} is invalid: {artifact.problem}",
                feature=feature.id,
                artifact=step.artifact,
                command=f"fix {artifact.path}, or delete it to have the {step.role.value} redo it",
            )
        failures = feature.failures.get(step.step, 0)
        if failures > state.max_retries:
            return Action(
                ActionKind.ESCALATE,
                Lane.DESIGN,
                f"{step.role.value} failed {failures} attempts at {step.step.value}",
                feature=feature.id,
                role=step.role,
                step=step.step,
                feedback=feature.feedback.get(step.step),
            )
        feedback = feature.feedback.get(step.step) or artifact.feedback
        reason = (
            f"{step.artifact.value} must be redone: {artifact.feedback}"
            if condition is ArtifactCondition.NEEDS_REDO
            else f"no {step.artifact.value} yet"
        )
        return Action(
            ActionKind.RUN_TURN,
            Lane.DESIGN,
            reason if failures == 0 else f"{reason} (retry after {failures} failed attempts)",
            feature=feature.id,
            role=step.role,
            step=step.step,
            artifact=step.artifact,
            attempt=failures + 1,
            feedback=feedback,
        )
    return None
