"""`consort status`: what a person needs to see at a glance, as a typed report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from consort.core.errors import ConsortError
from consort.core.gate_phase import deploy_phase, design_phase, promote_phase, story_phase
from consort.core.machine import next_action
from consort.core.project import Project
from consort.core.state import Escalation, FeatureState, ItemStage, State


@dataclass
class FeatureLine:
    id: str
    title: str
    lane: str
    design_gate: str  # a GatePhase: "not reached", "open", "approved", "approved (drifted)", ...
    next: str
    artifacts: dict[str, str]
    deploy_gate: str = "not reached"
    promote_gate: str = "not reached"


@dataclass
class StoryLine:
    feature: str
    story: str
    branch: str
    cycles_done: int
    cycles: int
    current: str  # "T3 green", or the story's own state
    gate: str  # the acceptance gate's GatePhase


@dataclass
class StatusReport:
    features: list[FeatureLine] = field(default_factory=list)
    stories: list[StoryLine] = field(default_factory=list)
    escalations: list[dict[str, str]] = field(default_factory=list)
    branches: list[dict[str, object]] = field(default_factory=list)
    branch_problem: str | None = None
    unsandboxed_turns: list[str] = field(default_factory=list)  # turns run with sandbox = "off"
    sandbox_warning: str | None = None
    spikes: list[dict[str, object]] = field(default_factory=list)  # running or expired ones

    def as_json(self) -> dict[str, Any]:
        return {
            "features": [vars(f) for f in self.features],
            "stories": [vars(s) for s in self.stories],
            "escalations": self.escalations,
            "branches": self.branches,
            "branch_problem": self.branch_problem,
            "unsandboxed_turns": self.unsandboxed_turns,
            "spikes": self.spikes,
        }


def _resolutions(feature: str, escalation: Escalation) -> str:
    """The commands that resolve an escalation, the first one always applicable."""
    short = feature.split("-", 1)[0]
    commands = [f'consort retry {short} --note "..."']
    if escalation.item and escalation.story:
        story = escalation.story.split("-", 1)[0]
        commands.append(f'consort amend {short}/{story}/{escalation.item} --note "..."')
        commands.append(f'consort reject design {short} --note "..."')
    return "  |  ".join(commands)


def _sandboxes(project: Project, report: StatusReport) -> None:
    from consort.core.ledger import Ledger, ledger_path
    from consort.lanes.verify.sandboxing import sandbox_record

    path = ledger_path(project.state_dir)
    record = sandbox_record(Ledger(path).read() if path.exists() else [])
    report.unsandboxed_turns = list(record.unsandboxed)
    report.sandbox_warning = record.warning()


def _spikes(project: Project) -> list[dict[str, object]]:
    """The spikes not ended yet, read only: an expired one says what collects it."""
    from datetime import UTC, datetime

    from consort.app.spike import running_or_expired

    now = datetime.now(UTC)
    return [spike.as_json(now) for spike in running_or_expired(project)]


def _stories(feature: FeatureState) -> list[StoryLine]:
    if feature.build is None:
        return []
    lines = []
    for story in feature.build.stories:
        done = [i for i in story.items if i.stage is ItemStage.DONE]
        pending = next((i for i in story.items if i.stage is not ItemStage.DONE), None)
        if story.merged:
            now = "merged"
        elif not story.created:
            now = "not started"
        elif pending is not None:
            now = f"{pending.id} {pending.stage.value}"
        else:
            now = "all cycles done"
        lines.append(
            StoryLine(
                feature=feature.id,
                story=story.key,
                branch=story.branch,
                cycles_done=len(done),
                cycles=len(story.items),
                current=now,
                gate=story_phase(story).value,
            )
        )
    return lines


def status(project: Project) -> StatusReport:
    """Features, stories, escalations and branches, as the ledger and the files make them now."""
    from consort.app.project import derived_state

    return collect(project, derived_state(project))


def collect(project: Project, state: State) -> StatusReport:
    report = StatusReport()
    _sandboxes(project, report)
    for feature in state.features:
        action = next_action(state, feature.id)
        report.features.append(
            FeatureLine(
                id=feature.id,
                title=feature.title,
                lane=action.lane.value,
                design_gate=design_phase(feature).value,
                deploy_gate=deploy_phase(feature.build).value,
                promote_gate=promote_phase(feature.build).value,
                next=action.kind.value,
                artifacts={
                    step.artifact.value: feature.artifacts[step.artifact].condition.value
                    for step in feature.steps()
                },
            )
        )
        report.stories += _stories(feature)
        if feature.escalation is not None:
            report.escalations.append(
                {
                    "feature": feature.id,
                    "step": feature.escalation.step.value,
                    "reason": feature.escalation.reason,
                    "command": _resolutions(feature.id, feature.escalation),
                }
            )
    report.spikes = _spikes(project)
    try:
        from consort.adapters.paired import PairedBranches

        report.branches = [row.as_json() for row in PairedBranches(project).rows()]
    except ConsortError as exc:
        report.branch_problem = exc.message
    return report
