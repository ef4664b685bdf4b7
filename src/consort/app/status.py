"""`consort status`: what a person needs to see at a glance, as a typed report.

Everything but the spikes' clocks and the branch table is derived from the project's files, and
kept until one of them changes (`consort.core.derived_cache`); the branch table comes from the
server's catalog, or from what the last read of it kept while no database was made or dropped
since (`consort.adapters.branch_rows`). An unchanged project answers without loading the
artifact models or the database driver.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from consort.core import derived_cache
from consort.core.errors import ConsortError
from consort.core.project import Project

if TYPE_CHECKING:
    from collections.abc import Sequence

    from consort.core.ledger import Event
    from consort.core.spikes import Spike
    from consort.core.state import Escalation, FeatureState, State


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
    # Every experiment side by side (`consort experiment compare`'s JSON), oldest first.
    experiments: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "features": [vars(f) for f in self.features],
            "stories": [vars(s) for s in self.stories],
            "escalations": self.escalations,
            "branches": self.branches,
            "branch_problem": self.branch_problem,
            "unsandboxed_turns": self.unsandboxed_turns,
            "spikes": self.spikes,
            "experiments": self.experiments,
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


def _sandboxes(report: StatusReport, events: list[Event]) -> None:
    from consort.lanes.verify.sandboxing import sandbox_record

    record = sandbox_record(events)
    report.unsandboxed_turns = list(record.unsandboxed)
    report.sandbox_warning = record.warning()


def _experiments(project: Project, events: list[Event]) -> list[dict[str, Any]]:
    if not any(e.type.value.startswith("experiment.") for e in events):
        return []  # and the experiments' modules stay unloaded
    from consort.app.experiment import comparisons

    return [c.as_json() for c in comparisons(project, events)]


def _spikes(spikes: list[Spike]) -> list[dict[str, object]]:
    """The spikes not ended yet, as of now: an expired one says what collects it."""
    if not spikes:
        return []  # and the spike module (the ledger's) stays unloaded
    from datetime import UTC, datetime

    from consort.core.spikes import SpikeCondition

    now = datetime.now(UTC)
    return [s.as_json(now) for s in spikes if s.condition(now) is not SpikeCondition.ENDED]


def _stories(feature: FeatureState) -> list[StoryLine]:
    from consort.core.gate_phase import story_phase
    from consort.core.state import ItemStage

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
        elif pending is not None and pending.experiment is not None:
            race = "running" if pending.experiment_running else "waiting for a person"
            now = f"{pending.id} {pending.stage.value}, experiment {pending.experiment} {race}"
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
    report, spikes = _files_part(project)
    report.spikes = _spikes(spikes)
    _branches(project, report, live=False)
    return report


def keep_answer(project: Project) -> None:
    """Derive and keep what `status` would derive now: the files' part, and the branch table
    where the embedded server runs and its kept table no longer holds (a server that is not
    running is left as it is: `status` starts it when asked)."""
    _files_part(project)
    from consort.adapters import branch_rows

    if branch_rows.recall(project.state_dir) is not None:
        return
    from consort.adapters.db.backend import EmbeddedBackend, open_backend

    backend = open_backend(project)
    if isinstance(backend, EmbeddedBackend) and backend.is_running():
        from consort.adapters.paired import PairedBranches

        PairedBranches(project, backend).rows()  # which keeps what it read


def _files_part(project: Project) -> tuple[StatusReport, list[Spike]]:
    """The report but its clocks and branch table: kept, or derived now and kept."""
    digest = derived_cache.inputs_digest(project.root, project.state_dir, STATUS_QUESTION)
    kept = derived_cache.load(project.state_dir, STATUS_QUESTION, digest)
    derived = _from_kept(kept) if kept is not None else None
    if derived is not None:
        return derived
    from consort.app.project import derived_state, ledger_events

    events = ledger_events(project)  # read once, for the state and for the report
    report, spikes = _derived(project, derived_state(project, events), events)
    derived_cache.store(project.state_dir, STATUS_QUESTION, digest, _keep(report, spikes))
    return report, spikes


def collect(project: Project, state: State, events: Sequence[Event] | None = None) -> StatusReport:
    """The report for `state`, its branch table read from the server now; `events`, when the
    caller has read the ledger already (the state's own), spares reading it again."""
    report, spikes = _derived(project, state, events)
    report.spikes = _spikes(spikes)
    _branches(project, report, live=True)
    return report


STATUS_QUESTION = "status"


def _derived(
    project: Project, state: State, events: Sequence[Event] | None = None
) -> tuple[StatusReport, list[Spike]]:
    """What the files decide: everything but the clocks and the branch table."""
    from consort.app.project import ledger_events
    from consort.app.spike import spikes_of
    from consort.core.gate_phase import deploy_phase, design_phase, promote_phase
    from consort.core.machine import next_action

    read = ledger_events(project) if events is None else list(events)
    report = StatusReport()
    _sandboxes(report, read)
    report.experiments = _experiments(project, read)
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
    return report, spikes_of(read)


def _keep(report: StatusReport, spikes: list[Spike]) -> dict[str, Any]:
    from consort.core.spikes import spike_record

    return {
        "features": [asdict(f) for f in report.features],
        "stories": [asdict(s) for s in report.stories],
        "escalations": report.escalations,
        "unsandboxed_turns": report.unsandboxed_turns,
        "sandbox_warning": report.sandbox_warning,
        "spikes": [spike_record(s) for s in spikes],
        "experiments": report.experiments,
    }


def _from_kept(kept: dict[str, Any]) -> tuple[StatusReport, list[Spike]] | None:
    """The report `_keep` kept, or None when it does not read back."""
    try:
        report = StatusReport(
            features=[FeatureLine(**f) for f in kept["features"]],
            stories=[StoryLine(**s) for s in kept["stories"]],
            escalations=list(kept["escalations"]),
            unsandboxed_turns=list(kept["unsandboxed_turns"]),
            sandbox_warning=kept["sandbox_warning"],
            experiments=list(kept["experiments"]),
        )
        records = list(kept["spikes"])
        if not records:
            return report, []
        from consort.core.spikes import spike_from_record

        return report, [spike_from_record(r) for r in records]
    except (KeyError, TypeError, ValueError):
        return None


def _branches(project: Project, report: StatusReport, *, live: bool) -> None:
    from consort.adapters import branch_rows

    databases = None if live else branch_rows.recall(project.state_dir)
    if databases is not None:
        from consort.adapters.vcs import Git

        names, current = Git(project.root).branches_and_current()
        rows = branch_rows.branch_rows(names, current, databases)
        report.branches = [row.as_json() for row in rows]
        return
    try:
        from consort.adapters.paired import PairedBranches

        report.branches = [row.as_json() for row in PairedBranches(project).rows()]
    except ConsortError as exc:
        report.branch_problem = exc.message
