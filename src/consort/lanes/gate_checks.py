"""The gate commands act on an open gate only: any other is refused with the phase it is in and
what the person can do instead (approving twice, or sending back a promoted design, would
record a decision nobody can act on)."""

from __future__ import annotations

from consort.core.errors import UsageError
from consort.core.gate_phase import (
    GatePhase,
    deploy_phase,
    design_phase,
    design_problems,
    promote_phase,
    story_phase,
)
from consort.core.state import FeatureState, GateKind, ItemStage, StoryState


def short_id(feature: str) -> str:
    """ "F1" of "F1-greeting-counter": what the commands accept."""
    return feature.split("-", 1)[0]


def require_open(feature: FeatureState, gate: GateKind, story: StoryState | None = None) -> None:
    """Raise a UsageError unless `gate` of `feature` (of `story`, for acceptance) is open."""
    if gate is GateKind.DESIGN:
        _require_design(feature)
    elif gate is GateKind.STORY:
        if story is None:
            raise UsageError("the story gate needs a story", fix="e.g. consort approve story F1/S1")
        _require_story(feature, story)
    elif gate is GateKind.DEPLOY:
        _require_deploy(feature)
    else:
        _require_promote(feature)


def _drive(feature: FeatureState) -> str:
    if feature.escalation is not None:
        return (
            f"{feature.id} waits on an escalation first: `consort status` shows how to resolve it"
        )
    return f"run `consort drive --feature {short_id(feature.id)}`; it stops when the gate opens"


def _require_design(feature: FeatureState) -> None:
    phase = design_phase(feature)
    if phase.is_open:
        return
    name = f"the design gate of {feature.id}"
    gate = feature.design_gate
    if phase is GatePhase.NOT_REACHED:
        raise UsageError(
            f"{name} is not reached: the design of {feature.id} is not complete: "
            + "; ".join(design_problems(feature)),
            fix=_drive(feature),
        )
    if phase is GatePhase.REJECTED:
        raise UsageError(
            f"{name} is rejected (event {gate.seq}); the design is being redone: "
            + "; ".join(design_problems(feature)),
            fix=_drive(feature),
        )
    build = feature.build
    decided = f"{name} is already approved (by the {gate.actor}, event {gate.seq})"
    if build is not None and build.promoted:
        raise UsageError(
            f"{decided} and {feature.id} is promoted into {build.base_branch or 'its parent'}",
            fix="a change to it is a new feature: `consort intake feature --file change.md`",
        )
    raise UsageError(
        f"{decided}; its build is under way",
        fix=(
            _drive(feature)
            if feature.escalation is not None
            else f"`consort drive --feature {short_id(feature.id)}` continues the build; to "
            "change the design, record the change as a new feature (`consort intake feature`)"
        ),
    )


def _require_story(feature: FeatureState, story: StoryState) -> None:
    phase = story_phase(story)
    if phase.is_open:
        return
    name = f"story {story.key} of {feature.id}"
    if phase is GatePhase.NOT_REACHED:
        if not story.created:
            raise UsageError(
                f"{name} is not waiting for acceptance: not started yet", fix=_drive(feature)
            )
        unfinished = [
            f"{i.id} ({i.stage.value})" for i in story.items if i.stage is not ItemStage.DONE
        ]
        raise UsageError(
            f"{name} is not waiting for acceptance: its cycles are not done "
            f"(unfinished: {', '.join(unfinished)})",
            fix=_drive(feature),
        )
    if phase is GatePhase.REJECTED:
        raise UsageError(f"{name} was rejected", fix=_drive(feature))
    build = feature.build
    if story.merged:
        into = build.feature_branch if build is not None else "its feature branch"
        raise UsageError(
            f"{name} is already accepted (by the {story.gate_actor or 'product owner'}) and merged "
            f"into {into}",
            fix="nothing is left to decide for it; `consort status` shows the next gate",
        )
    raise UsageError(
        f"{name} is already accepted (by the {story.gate_actor or 'product owner'})",
        fix=f"`consort drive --feature {short_id(feature.id)}` merges it",
    )


def _building(feature: FeatureState) -> str:
    """What keeps the deploy gate from opening, in words."""
    build = feature.build
    if build is None:
        return f"the design of {feature.id} is not approved yet"
    left = [s.key for s in build.stories if not s.merged]
    if left:
        return "stories not merged yet: " + ", ".join(left)
    return "every story is merged; the deploy proof has not run (or not passed) yet"


def _require_deploy(feature: FeatureState) -> None:
    phase = deploy_phase(feature.build)
    if phase.is_open:
        return
    name = f"the deploy gate of {feature.id}"
    if phase is GatePhase.NOT_REACHED:
        raise UsageError(f"{name} is not reached: {_building(feature)}", fix=_drive(feature))
    build = feature.build
    if build is not None and build.promoted:
        raise UsageError(
            f"{name} is already approved and {feature.id} is promoted",
            fix="nothing is left to decide for it",
        )
    nxt = (
        f"the promote gate is next: `consort approve promote {short_id(feature.id)}`"
        if promote_phase(build).is_open
        else _drive(feature)
    )
    raise UsageError(f"{name} is already approved", fix=nxt)


def _require_promote(feature: FeatureState) -> None:
    phase = promote_phase(feature.build)
    if phase.is_open:
        return
    name = f"the promote gate of {feature.id}"
    build = feature.build
    if phase is GatePhase.NOT_REACHED:
        if deploy_phase(build).is_open:
            raise UsageError(
                f"{name} is not reached: the deploy gate is still open",
                fix=f"decide it first: `consort approve deploy {short_id(feature.id)}`",
            )
        raise UsageError(f"{name} is not reached: {_building(feature)}", fix=_drive(feature))
    if build is not None and build.promoted:
        raise UsageError(
            f"{name} is already approved and {feature.id} is promoted into "
            f"{build.base_branch or 'its parent'}",
            fix="nothing is left to decide for it",
        )
    raise UsageError(
        f"{name} is already approved",
        fix=f"`consort drive --feature {short_id(feature.id)}` promotes it",
    )
