"""The experiments' fold and the recommendation's rules (pure: built from typed events)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from consort.core.experiments import (
    ExperimentCondition,
    Recommendation,
    approach_branch,
    archive_branch,
    experiments_of,
    fold_experiments,
    recommend,
)
from consort.core.ledger import Actor, Event, EventType
from consort.core.ledger.events import ApproachOutcome, EventPayload

SUBJECT = "F1-x/S1-y/T1"


def _events(*payloads: tuple[EventPayload, str]) -> list[Event]:
    events = []
    for seq, (payload, subject) in enumerate(payloads, start=1):
        data: dict[str, Any] = payload.to_data()
        events.append(
            Event(seq, datetime.now(UTC), payload.event_type, Actor.ORCHESTRATOR, subject, data, "")
        )
    return events


def _started(*names: str) -> tuple[EventPayload, str]:
    from consort.core.ledger.events import ApproachRecord, ExperimentStarted

    approaches = [
        ApproachRecord(name=n, branch=approach_branch(SUBJECT, 1, n), database=f"db_{n}")
        for n in names
    ]
    return ExperimentStarted(number=1, red_commit="r" * 40, approaches=approaches), SUBJECT


def _attempt(name: str, attempt: int, passed: bool) -> tuple[EventPayload, str]:
    from consort.core.ledger.events import ApproachAttempted

    payload = ApproachAttempted(
        number=1,
        approach=name,
        attempt=attempt,
        turn=f"{name}-{attempt}",
        passed=passed,
        commit="c" * 40 if passed else None,
    )
    return payload, SUBJECT


def _ended(name: str, outcome: ApproachOutcome, smells: int = 0) -> tuple[EventPayload, str]:
    from consort.core.ledger.events import ApproachEnded

    found = [{"kind": "hard-coded-answer"}] * smells
    return ApproachEnded(number=1, approach=name, outcome=outcome, smells=found), SUBJECT


def _violation(turn: str) -> tuple[EventPayload, str]:
    from consort.core.ledger.events import ViolationRecorded

    return ViolationRecorded(turn=turn, path="tests/test_a.py", rule="protected"), SUBJECT


def test_branch_names_keep_the_cycle_and_the_experiment_number() -> None:
    branch = approach_branch(SUBJECT, 2, "lean")
    assert branch == "experiment/F1-x/S1-y/T1-2/lean"
    assert archive_branch(branch) == "archive/experiment/F1-x/S1-y/T1-2/lean"


def test_one_passing_approach_with_the_fewest_repairs_wins() -> None:
    events = _events(
        _started("honest", "repairs", "never"),
        _attempt("honest", 1, True),
        _ended("honest", ApproachOutcome.PASSED),
        _attempt("repairs", 1, False),
        _attempt("repairs", 2, True),
        _ended("repairs", ApproachOutcome.PASSED),
        _attempt("never", 1, False),
        _attempt("never", 2, False),
        _ended("never", ApproachOutcome.CYCLES_SPENT),
    )
    (experiment,) = fold_experiments(events)
    assert experiment.condition is ExperimentCondition.WAITING
    assert experiment.approaches["repairs"].repairs == 1
    advice = recommend(experiment)
    assert advice.kind is Recommendation.WINNER and advice.winner == "honest"
    assert advice.candidates == ("honest", "repairs")


def test_a_violation_outweighs_fewer_repairs() -> None:
    events = _events(
        _started("quick", "careful"),
        _violation("quick-1"),
        _attempt("quick", 1, True),
        _ended("quick", ApproachOutcome.PASSED),
        _attempt("careful", 1, False),
        _attempt("careful", 2, True),
        _ended("careful", ApproachOutcome.PASSED),
    )
    (experiment,) = fold_experiments(events)
    assert experiment.approaches["quick"].violations == 1
    assert recommend(experiment).winner == "careful"


def test_a_tie_is_a_persons_choice_and_no_pass_is_none() -> None:
    tie = fold_experiments(
        _events(
            _started("a", "b"),
            _attempt("a", 1, True),
            _ended("a", ApproachOutcome.PASSED, smells=1),
            _attempt("b", 1, True),
            _ended("b", ApproachOutcome.PASSED, smells=1),
        )
    )[0]
    advice = recommend(tie)
    assert advice.kind is Recommendation.SEVERAL and advice.winner is None
    assert set(advice.candidates) == {"a", "b"}
    none = fold_experiments(
        _events(
            _started("a", "b"),
            _attempt("a", 1, False),
            _ended("a", ApproachOutcome.WALL_TIME),
        )
    )[0]
    assert none.condition is ExperimentCondition.RUNNING  # b never ended
    assert recommend(none).kind is Recommendation.NONE


def test_only_the_experiments_own_events_count() -> None:
    events = _events(
        _started("a", "b"),
        (_attempt("zzz", 1, True)[0], SUBJECT),  # no such approach
        (_ended("a", ApproachOutcome.PASSED)[0], "F1-x/S1-y/T2"),  # another cycle
    )
    (experiment,) = fold_experiments(events)
    assert all(not a.attempts and a.ended is None for a in experiment.approaches.values())
    assert EventType.EXPERIMENT_STARTED.value == "experiment.started"


def test_experiments_of_a_story_a_cycle_or_all() -> None:
    events = _events(_started("a", "b"))
    assert len(experiments_of(events, "F1-x/S1-y")) == 1
    assert len(experiments_of(events, SUBJECT)) == 1
    assert len(experiments_of(events, "")) == 1
    assert experiments_of(events, "F1-x/S1") == []


def _at(event: Event, seconds: float) -> Event:
    """The event as if recorded `seconds` after a fixed start."""
    return replace(event, time=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds))


def _began(name: str, attempt: int, spent: float) -> tuple[EventPayload, str]:
    from consort.core.ledger.events import ApproachBegan

    return ApproachBegan(number=1, approach=name, attempt=attempt, spent_s=spent), SUBJECT


def test_the_wall_time_spent_counts_every_attempt_and_one_a_kill_left_in_flight() -> None:
    from consort.core.ledger.events import ApproachAttempted

    killed_at = datetime(2026, 1, 1, tzinfo=UTC)
    done = ApproachAttempted(number=1, approach="a", attempt=1, turn="t1", seconds=40.0)
    events = _events(_started("a", "b"), _began("a", 1, 0.0), (done, SUBJECT), _began("a", 2, 41.0))
    # attempt 2 began at 100 s and the killed run's last event was at 130 s
    events = [_at(e, 100.0 if i == 3 else float(i)) for i, e in enumerate(events)]
    (experiment,) = fold_experiments(events)
    a = experiment.approaches["a"]
    assert a.spent_seconds(killed_at + timedelta(seconds=130)) == 41.0 + 30.0
    # A kill with no attempt in flight: what the attempts recorded, and what the last began said.
    events = _events(_started("a", "b"), _began("a", 1, 12.5), (done, SUBJECT))
    (experiment,) = fold_experiments(events)
    assert experiment.approaches["a"].spent_seconds(killed_at) == 12.5 + 40.0
    # An approach that never began spent nothing; ledgers from before the begin events count
    # their attempts' own measure.
    assert experiment.approaches["b"].spent_seconds(killed_at) == 0.0
    (old,) = fold_experiments(_events(_started("a"), (done, SUBJECT)))
    assert old.approaches["a"].spent_seconds(killed_at) == 40.0
