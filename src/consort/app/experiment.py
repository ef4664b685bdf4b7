"""`consort experiment ...`: approaches to one cycle's GREEN raced on their own paired branches,
compared side by side, and one of them selected by a person.

Starting, selecting and discarding are a person's decisions: each refuses to run inside an agent
turn, and takes the project's single-writer lock (no `consort drive` runs meanwhile). None of
them is offered over MCP.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from consort.adapters import proc
from consort.app.overview import AGENT_RECORD
from consort.core.drive_lock import hold_writer
from consort.core.errors import UsageError
from consort.core.experiments import (
    Advice,
    Approach,
    Experiment,
    ExperimentCondition,
    experiments_of,
    recommend,
)
from consort.core.ledger import Event, Ledger, ledger_path
from consort.core.ledger.events import ExperimentDiscarded, ExperimentSelected
from consort.core.machine import next_action
from consort.core.project import Project
from consort.core.vocabulary import ActionKind, Step

Progress = Callable[[str], None]
PREPARE_STEPS = 40  # bound on the story's own steps (its branch, the RED) run before a race


@dataclass(frozen=True)
class ApproachRow:
    """One approach, side by side with the others."""

    name: str
    outcome: str  # passed | cycles-spent | wall-time | error | running
    tests_passed: int
    tests_total: int
    cycles: int
    repairs: int
    violations: int
    findings: int  # static checks on the passing change
    lines_added: int
    lines_removed: int
    schema_changes: tuple[str, ...]
    seconds: float
    cost_usd: float | None  # None: no turn reported a cost
    message: str
    branch: str
    adapter: str
    model: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "outcome": self.outcome,
            "tests_passed": self.tests_passed,
            "tests_total": self.tests_total,
            "cycles": self.cycles,
            "repairs": self.repairs,
            "violations": self.violations,
            "findings": self.findings,
            "lines_added": self.lines_added,
            "lines_removed": self.lines_removed,
            "schema_changes": list(self.schema_changes),
            "seconds": self.seconds,
            "cost_usd": self.cost_usd,
            "message": self.message,
            "branch": self.branch,
            "adapter": self.adapter,
            "model": self.model,
        }


@dataclass(frozen=True)
class Comparison:
    subject: str  # <F>/<S>/<T>
    number: int
    condition: ExperimentCondition
    concurrency: int
    concurrency_note: str
    rows: tuple[ApproachRow, ...]
    advice: Advice
    selected: str | None

    @property
    def story(self) -> str:
        """The story as the commands take it: `F1/S1`."""
        feature, story, _item = self.subject.split("/")
        return f"{feature.split('-', 1)[0]}/{story.split('-', 1)[0]}"

    @property
    def commands(self) -> list[str]:
        """What a person runs next, the recommended one first; none once it is closed."""
        story = self.story
        if self.condition is ExperimentCondition.RUNNING:
            return [f"consort experiment {story}"]  # resumes the approaches not ended
        if self.condition is not ExperimentCondition.WAITING:
            return []
        compare = f"consort experiment compare {story}"
        discard = f"consort experiment discard {story}"
        if self.advice.winner:
            return [f"consort experiment select {story} {self.advice.winner}", compare, discard]
        if self.advice.candidates:
            return [f"consort experiment select {story} NAME", compare, discard]
        return [discard, compare]

    def as_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "story": self.story,
            "experiment": self.number,
            "condition": self.condition.value,
            "concurrency": self.concurrency,
            "concurrency_note": self.concurrency_note,
            "approaches": [r.as_json() for r in self.rows],
            "recommendation": self.advice.as_json(),
            "selected": self.selected,
            "commands": self.commands,
        }


@dataclass(frozen=True)
class ExperimentRun:
    comparison: Comparison
    prepared: list[str] = field(default_factory=list)  # the story's own steps run first
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            **self.comparison.as_json(),
            "prepared": self.prepared,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class Selection:
    subject: str
    payload: ExperimentSelected | ExperimentDiscarded

    @property
    def approach(self) -> str | None:
        return self.payload.approach if isinstance(self.payload, ExperimentSelected) else None

    def as_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "selected": self.approach,
            "commit": self.payload.commit if isinstance(self.payload, ExperimentSelected) else None,
            "archived": list(self.payload.archived),
            "dropped": list(self.payload.dropped),
        }


# ---- commands ------------------------------------------------------------------------------


def run(project: Project, subject: str, approaches: int, progress: Progress) -> ExperimentRun:
    """Start an experiment on the story's current cycle (or finish the open one whose run was
    stopped) and race its approaches; the comparison when every approach has ended."""
    import time

    from consort.lanes import experiments as lane
    from consort.lanes.humans import refuse_agent

    refuse_agent("starting an experiment")
    began = time.monotonic()
    prepared = _prepare(project, subject, progress)
    from consort.lanes.recover import collect_leftovers
    from consort.lanes.stops import stop_signals_interrupt

    # As `consort drive` does: SIGTERM and SIGHUP stop it like Ctrl-C; owned children, so that
    # after a kill -9 the next run (or branch gc) finds what the race left; and what a killed
    # run left is removed first.
    with (
        stop_signals_interrupt(),
        hold_writer(project.state_dir),
        proc.owning_children(project.state_dir),
    ):
        for line in collect_leftovers(project, writer=True, start_server=True):
            progress(f"after a crash: {line}")
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        experiment = _unfinished(project, ledger, subject)
        if experiment is None:
            experiment = lane.start(project, ledger, subject, approaches, progress)
        else:
            progress(f"experiment {experiment.number} on {experiment.subject}: resuming")
        lane.race(project, ledger, experiment, progress)
        found = _latest(ledger, experiment.subject)
    return ExperimentRun(_compare(project, found), prepared, time.monotonic() - began)


def compare(project: Project, subject: str) -> Comparison:
    """The story's latest experiment, side by side (reads only)."""
    from consort.lanes import experiments as lane

    ledger = Ledger(ledger_path(project.state_dir))
    events = ledger.read()
    from consort.core.derive import derive

    state = derive(events, project.config, project.state_dir)
    feature, story = lane.resolve_story(project, state, subject)
    found = experiments_of(events, f"{feature.id}/{story.key}")
    if not found:
        raise UsageError(
            f"{feature.id}/{story.key} has had no experiment",
            fix=f"consort experiment {subject} --approaches 3",
        )
    return _compare(project, found[-1])


def comparisons(project: Project, events: list[Event]) -> list[Comparison]:
    """Every experiment of the project, side by side, in the order they were started (reads
    only): what `consort status` and the dashboard show."""
    return [_compare(project, e) for e in experiments_of(events, "")]


def select(project: Project, subject: str, name: str, note: str | None) -> Selection:
    """A person keeps approach `name`: its GREEN becomes the story's; the others are archived."""
    from consort.lanes import experiments as lane
    from consort.lanes.humans import refuse_agent

    refuse_agent("selecting an experiment's approach")
    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        cycle, chosen = lane.select(project, ledger, subject, name, note)
    return Selection(cycle, chosen)


def discard(project: Project, subject: str, note: str | None) -> Selection:
    """A person keeps no approach: all are archived, and the cycle's GREEN is built as usual."""
    from consort.lanes import experiments as lane
    from consort.lanes.humans import refuse_agent

    refuse_agent("discarding an experiment")
    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        cycle, dropped = lane.discard(project, ledger, subject, note)
    return Selection(cycle, dropped)


# ---- helpers -------------------------------------------------------------------------------


def _prepare(project: Project, subject: str, progress: Progress) -> list[str]:
    """Run the steps that come before the story's cycle's GREEN (the feature's branch, the
    story's, the RED), through the normal drive loop, one step at a time; anything else (a
    design step, a gate, an escalation) stops here, and `start` says what comes next."""
    from consort.core.derive import derive
    from consort.lanes import experiments as lane
    from consort.lanes.loop import drive

    done: list[str] = []
    for _ in range(PREPARE_STEPS):
        ledger = Ledger(ledger_path(project.state_dir))
        state = derive(ledger.read(), project.config, project.state_dir)
        feature, story = lane.resolve_story(project, state, subject)
        action = next_action(state, feature.id)
        ours = action.kind is ActionKind.CREATE_FEATURE_BRANCH or (
            action.story == story.key
            and (
                action.kind is ActionKind.CREATE_STORY_BRANCH
                or (action.kind is ActionKind.RUN_TURN and action.step is Step.RED)
            )
        )
        if not ours:
            return done
        progress(f"{feature.id}: {action.reason}")
        result = drive(project, feature=feature.id, max_steps=1, progress=progress)
        done.append(action.reason)
        if result.last is not None and result.last.stops:
            return done
    return done


def _latest(ledger: Ledger, subject: str) -> Experiment:
    return experiments_of(ledger.read(), subject)[-1]


def _unfinished(project: Project, ledger: Ledger, subject: str) -> Experiment | None:
    """The story's open experiment whose run stopped before every approach ended."""
    from consort.lanes import experiments as lane

    try:
        _cycle, experiment = lane.open_experiment(project, ledger, subject)
    except UsageError:
        return None
    if experiment.condition is ExperimentCondition.WAITING:
        raise UsageError(
            f"experiment {experiment.number} on {experiment.subject} has ended and waits for a "
            "person's choice",
            fix=f"consort experiment compare {subject}, then consort experiment select "
            f"{subject} NAME (or discard {subject})",
        )
    return experiment


def _compare(project: Project, experiment: Experiment) -> Comparison:
    rows = tuple(_row(project, a) for a in experiment.approaches.values())
    return Comparison(
        subject=experiment.subject,
        number=experiment.number,
        condition=experiment.condition,
        concurrency=experiment.started.concurrency,
        concurrency_note=experiment.started.concurrency_note,
        rows=rows,
        advice=recommend(experiment),
        selected=experiment.selected.approach if experiment.selected else None,
    )


def _row(project: Project, approach: Approach) -> ApproachRow:
    ended = approach.ended
    last = approach.attempts[-1] if approach.attempts else None
    run = last.run if last is not None else None
    passing = approach.passing_attempt
    return ApproachRow(
        name=approach.name,
        outcome=ended.outcome.value if ended is not None and ended.outcome else "running",
        tests_passed=len(run.passing) if run is not None else 0,
        tests_total=len(run.tests) if run is not None else 0,
        cycles=len(approach.attempts),
        repairs=approach.repairs,
        violations=approach.violations,
        findings=len(ended.smells) if ended is not None else 0,
        lines_added=ended.lines_added if ended is not None else 0,
        lines_removed=ended.lines_removed if ended is not None else 0,
        schema_changes=tuple(passing.schema_changes if passing else ()),
        seconds=float(ended.seconds) if ended is not None else 0.0,
        cost_usd=_cost(project, approach.turns),
        message=ended.message if ended is not None else "",
        branch=approach.record.branch,
        adapter=approach.record.adapter,
        model=approach.record.model,
    )


def _cost(project: Project, turns: list[str]) -> float | None:
    """What the approach's agent CLIs reported their turns cost (None: none reported one)."""
    total: float | None = None
    for turn in turns:
        path = project.layout.turn(turn) / AGENT_RECORD
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        cost = record.get("cost_usd") if isinstance(record, dict) else None
        if isinstance(cost, int | float):
            total = (total or 0.0) + float(cost)
    return total
