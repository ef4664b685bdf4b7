"""Experiments as the ledger knows them: which approaches raced one cycle, how each did, which
one a person kept, and the rule-based recommendation. Pure: a function of the ledger's events.

An experiment races N drivers at one cycle's GREEN, after its RED is verified: every approach
gets its own paired branch (`experiment/<F>/<S>/<T>-<n>/<NAME>`, a worktree and its own copy of
the story's database) and works against the same frozen RED tests, proven by the build's own
sealed runs. When a person selects one, the story keeps its GREEN as if it had been the only
one; the others' branches are renamed under `archive/` (kept until `consort branch gc`) and
every approach's database is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from consort.core.ledger.chain import Event
from consort.core.ledger.events import (
    ApproachAttempted,
    ApproachBegan,
    ApproachEnded,
    ApproachOutcome,
    ApproachRecord,
    ExperimentDiscarded,
    ExperimentSelected,
    ExperimentStarted,
    ViolationRecorded,
)

BRANCH_PREFIX = "experiment/"
ARCHIVE_PREFIX = "archive/"


def approach_branch(subject: str, number: int, name: str) -> str:
    """`experiment/<F>/<S>/<T>-<n>/<NAME>` for cycle `subject` (`<F>/<S>/<T>`)."""
    return f"{BRANCH_PREFIX}{subject}-{number}/{name}"


def archive_branch(branch: str) -> str:
    return f"{ARCHIVE_PREFIX}{branch}"


class ExperimentCondition(StrEnum):
    RUNNING = "running"  # started; not every approach has ended
    WAITING = "waiting"  # every approach ended: a person selects one (or discards them)
    SELECTED = "selected"
    DISCARDED = "discarded"


@dataclass
class Approach:
    """One approach of one experiment, folded from its events."""

    record: ApproachRecord
    attempts: list[ApproachAttempted] = field(default_factory=list)
    ended: ApproachEnded | None = None
    violations: int = 0
    # The last attempt begun, when it began, and its end when one was recorded (a kill leaves none).
    last_began: ApproachBegan | None = None
    last_began_at: datetime | None = None
    last_closed: ApproachAttempted | None = None

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def passed(self) -> bool:
        return self.ended is not None and self.ended.outcome is ApproachOutcome.PASSED

    @property
    def passing_attempt(self) -> ApproachAttempted | None:
        return next((a for a in self.attempts if a.passed), None)

    @property
    def turns(self) -> list[str]:
        return [a.turn for a in self.attempts if a.turn]

    @property
    def repairs(self) -> int:
        return max(len(self.attempts) - 1, 0)

    def spent_seconds(self, killed_at: datetime) -> float:
        """The wall time the approach has spent of its budget: every attempt's, including one a
        killed run left in flight, counted up to `killed_at` (the last event that run recorded).
        Ledgers from before `experiment.attempt-began` count their recorded attempts only."""
        began, at = self.last_began, self.last_began_at
        if began is None or at is None:
            return sum(float(a.seconds) for a in self.attempts)
        if self.last_closed is not None:
            return float(began.spent_s) + float(self.last_closed.seconds)
        return float(began.spent_s) + max((killed_at - at).total_seconds(), 0.0)


@dataclass
class Experiment:
    """One experiment of one cycle (`<F>/<S>/<T>`), numbered per cycle."""

    subject: str
    number: int
    started: ExperimentStarted
    approaches: dict[str, Approach]
    seq: int  # the ledger event that started it
    selected: ExperimentSelected | None = None
    discarded: ExperimentDiscarded | None = None

    @property
    def feature(self) -> str:
        return self.subject.split("/")[0]

    @property
    def story(self) -> str:
        return self.subject.split("/")[1]

    @property
    def item(self) -> str:
        return self.subject.split("/")[2]

    @property
    def condition(self) -> ExperimentCondition:
        if self.selected is not None:
            return ExperimentCondition.SELECTED
        if self.discarded is not None:
            return ExperimentCondition.DISCARDED
        if all(a.ended is not None for a in self.approaches.values()):
            return ExperimentCondition.WAITING
        return ExperimentCondition.RUNNING

    @property
    def open(self) -> bool:
        return self.condition in (ExperimentCondition.RUNNING, ExperimentCondition.WAITING)


def fold_experiments(events: Iterable[Event]) -> list[Experiment]:
    """Every experiment in the ledger, in the order they were started."""
    events = list(events)
    found: dict[tuple[str, int], Experiment] = {}
    for event in events:
        _fold(found, event)
    # A turn's violations are recorded before the attempt's event names the turn.
    by_turn = {
        turn: approach
        for experiment in found.values()
        for approach in experiment.approaches.values()
        for turn in approach.turns
    }
    for event in events:
        payload = event.payload
        if isinstance(payload, ViolationRecorded) and payload.turn in by_turn:
            by_turn[payload.turn].violations += 1
    return sorted(found.values(), key=lambda e: e.seq)


def _fold(found: dict[tuple[str, int], Experiment], event: Event) -> None:
    payload = event.payload
    if isinstance(payload, ExperimentStarted):
        found[(event.subject, payload.number)] = Experiment(
            event.subject,
            payload.number,
            payload,
            {a.name: Approach(a) for a in payload.approaches},
            event.seq,
        )
        return
    if isinstance(payload, ApproachBegan | ApproachAttempted | ApproachEnded):
        approach = _approach(found, event.subject, payload.number, payload.approach)
        if approach is None:
            return
        if isinstance(payload, ApproachBegan):
            approach.last_began, approach.last_began_at = payload, event.time
            approach.last_closed = None
        elif isinstance(payload, ApproachAttempted):
            approach.attempts.append(payload)
            if approach.last_began is not None and approach.last_began.attempt == payload.attempt:
                approach.last_closed = payload
        else:
            approach.ended = payload
        return
    if isinstance(payload, ExperimentSelected | ExperimentDiscarded):
        experiment = found.get((event.subject, payload.number))
        if experiment is None:
            return
        if isinstance(payload, ExperimentSelected):
            experiment.selected = payload
        else:
            experiment.discarded = payload


def _approach(
    found: dict[tuple[str, int], Experiment], subject: str, number: int, name: str
) -> Approach | None:
    experiment = found.get((subject, number))
    return None if experiment is None else experiment.approaches.get(name)


def experiments_of(events: Iterable[Event], subject_prefix: str) -> list[Experiment]:
    """The experiments of one story (`<F>/<S>`) or one cycle (`<F>/<S>/<T>`); every one for
    an empty prefix."""
    return [
        e
        for e in fold_experiments(events)
        if not subject_prefix
        or e.subject == subject_prefix
        or e.subject.startswith(subject_prefix + "/")
    ]


# ---- the recommendation --------------------------------------------------------------------


class Recommendation(StrEnum):
    WINNER = "winner"  # one approach is best by the rules
    SEVERAL = "several"  # several pass and none is best by the rules: a person picks
    NONE = "none"  # no approach passed


@dataclass(frozen=True)
class Advice:
    kind: Recommendation
    winner: str | None
    candidates: tuple[str, ...]
    reasons: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "kind": self.kind.value,
            "winner": self.winner,
            "candidates": list(self.candidates),
            "reasons": list(self.reasons),
        }


def _merit(approach: Approach) -> tuple[int, int, int]:
    """Lower is better: violations, then repairs, then static-check findings."""
    smells = len(approach.ended.smells) if approach.ended is not None else 0
    return (approach.violations, approach.repairs, smells)


def recommend(experiment: Experiment) -> Advice:
    """The rules, in order: only approaches that passed count; one left is the winner; among
    several, the one strictly best on (violations, repairs, static-check findings) wins; a tie
    on that is a person's choice. Lines changed, duration and cost are shown, never decisive:
    they say how an approach worked, not whether it is right."""
    passed = [a for a in experiment.approaches.values() if a.passed]
    if not passed:
        return Advice(Recommendation.NONE, None, (), ("no approach passed the RED tests",))
    names = tuple(a.name for a in passed)
    if len(passed) == 1:
        return Advice(
            Recommendation.WINNER, passed[0].name, names, ("the only approach that passed",)
        )
    ranked = sorted(passed, key=_merit)
    best, runner_up = ranked[0], ranked[1]
    if _merit(best) == _merit(runner_up):
        tied = tuple(a.name for a in ranked if _merit(a) == _merit(best))
        return Advice(
            Recommendation.SEVERAL,
            None,
            tied,
            (
                f"{', '.join(tied)} passed with the same violations, repairs and static-check "
                "findings: a person picks",
            ),
        )
    v, r, s = _merit(best)
    return Advice(
        Recommendation.WINNER,
        best.name,
        names,
        (
            f"{best.name} passed with the fewest violations, repairs and static-check findings "
            f"({v} violation(s), {r} repair(s), {s} finding(s))",
        ),
    )
