"""Spikes as the ledger knows them: names, time boxes, conditions, and the notes turns get."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from consort.core.errors import UsageError
from consort.core.layout import Layout
from consort.core.ledger import Actor, Ledger, ledger_path
from consort.core.ledger.events import SpikeEnded, SpikeEndReason, SpikeStarted
from consort.core.spikes import (
    MAX_TTL,
    SpikeCondition,
    check_name,
    expiry,
    fold_spikes,
    notes_problem,
    parse_ttl,
    spike_notes_inputs,
    subject_of,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2h", timedelta(hours=2)),
        ("90m", timedelta(minutes=90)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1d", timedelta(days=1)),
        ("45s", timedelta(seconds=45)),
        (" 2H ", timedelta(hours=2)),
        ("7d", MAX_TTL),
    ],
)
def test_time_boxes_read_as_durations(text: str, expected: timedelta) -> None:
    assert parse_ttl(text) == expected


@pytest.mark.parametrize("text", ["", "2", "h", "2 h", "-2h", "2hours", "1.5h", "0m", "8d", "2h-"])
def test_a_time_box_that_is_not_a_positive_duration_within_a_week_is_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_ttl(text)


@pytest.mark.parametrize("name", ["try-brin", "a", "x1", "0-start"])
def test_spike_names(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "Try", "a/b", "-x", "a b", "../up", "end", "list", "gc", "start", "x" * 41]
)
def test_names_that_are_paths_subcommands_or_odd_are_refused(name: str) -> None:
    with pytest.raises(UsageError):
        check_name(name)


def _started(name: str, feature: str | None, started: datetime, ttl: timedelta) -> SpikeStarted:
    return SpikeStarted(
        name=name,
        feature=feature,
        branch=f"spike/{name}",
        parent="main",
        database=f"spike_{name}",
        worktree=f".consort/worktrees/_spikes/{name}",
        base_commit="a" * 40,
        ttl_s=ttl.total_seconds(),
        expires=expiry(started, ttl),
    )


def _ended(name: str, notes: str | None, root: Path | None = None) -> SpikeEnded:
    digest = None
    if notes is not None:
        kept = (root or Path("/nonexistent")) / notes
        digest = hashlib.sha256(kept.read_bytes()).hexdigest() if kept.is_file() else "e" * 64
    return SpikeEnded(
        name=name,
        reason=SpikeEndReason.ENDED,
        notes=notes,
        notes_sha256=digest,
        head="b" * 40,
    )


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(ledger_path(tmp_path / ".consort"))


def test_a_spike_runs_until_its_time_box_and_is_expired_after(ledger: Ledger) -> None:
    now = datetime.now(UTC)
    ledger.record(_started("one", None, now, timedelta(hours=2)), Actor.HUMAN, subject_of("one"))
    spike = fold_spikes(ledger.read())["one"]
    assert spike.condition(spike.started) is SpikeCondition.RUNNING
    assert spike.condition(spike.expires - timedelta(seconds=1)) is SpikeCondition.RUNNING
    assert spike.condition(spike.expires) is SpikeCondition.EXPIRED
    assert spike.remaining(spike.expires + timedelta(hours=1)) == timedelta()


def test_a_second_start_of_a_name_cannot_move_its_time_box(ledger: Ledger) -> None:
    now = datetime.now(UTC)
    ledger.record(_started("one", None, now, timedelta(hours=1)), Actor.HUMAN, subject_of("one"))
    first = fold_spikes(ledger.read())["one"].expires
    ledger.record(_started("one", None, now, timedelta(days=7)), Actor.HUMAN, subject_of("one"))
    assert fold_spikes(ledger.read())["one"].expires == first


def test_an_ended_spike_stays_ended_and_keeps_its_first_end(ledger: Ledger) -> None:
    now = datetime.now(UTC)
    ledger.record(_started("one", "F1-x", now, timedelta(hours=1)), Actor.HUMAN, subject_of("one"))
    ledger.record(_ended("one", ".consort/spikes/one/notes.md"), Actor.HUMAN, subject_of("one"))
    ledger.record(_ended("one", None), Actor.HUMAN, subject_of("one"))
    spike = fold_spikes(ledger.read())["one"]
    assert spike.condition(now + timedelta(days=30)) is SpikeCondition.ENDED
    assert spike.notes == ".consort/spikes/one/notes.md"
    assert spike.remaining(now) == timedelta()


def test_turns_get_the_notes_of_their_own_features_ended_spikes(
    ledger: Ledger, tmp_path: Path
) -> None:
    layout = Layout.of(tmp_path)
    now = datetime.now(UTC)
    box = timedelta(hours=1)
    for name, feature in [("mine", "F1-x"), ("running", "F1-x"), ("other", "F2-y"), ("none", None)]:
        ledger.record(_started(name, feature, now, box), Actor.HUMAN, subject_of(name))
        path = layout.spike_notes(name)
        path.parent.mkdir(parents=True)
        path.write_text(f"notes of {name}\n")
    for name in ("mine", "other", "none"):
        notes = str(layout.spike_notes(name).relative_to(tmp_path))
        ledger.record(_ended(name, notes, tmp_path), Actor.HUMAN, subject_of(name))
    ledger.record(_started("gone", "F1-x", now, box), Actor.HUMAN, subject_of("gone"))
    ledger.record(_ended("gone", None), Actor.HUMAN, subject_of("gone"))

    inputs = spike_notes_inputs(ledger.read(), "F1-x", tmp_path)
    assert inputs == {"spike-mine": layout.spike_notes("mine")}
    assert spike_notes_inputs(ledger.read(), "F3-z", tmp_path) == {}
    spikes = fold_spikes(ledger.read())
    assert notes_problem(spikes["mine"], tmp_path, layout) is None

    # Notes changed after the spike ended are not what it left: no turn gets them.
    layout.spike_notes("mine").write_text("rewritten later\n")
    assert spike_notes_inputs(ledger.read(), "F1-x", tmp_path) == {}
    problem = notes_problem(spikes["mine"], tmp_path, layout)
    assert problem is not None and "changed since the spike ended" in problem
    layout.spike_notes("mine").unlink()
    problem = notes_problem(spikes["mine"], tmp_path, layout)
    assert problem is not None and "missing" in problem


def test_a_ledger_entry_pointing_outside_the_kept_notes_gives_nothing(
    ledger: Ledger, tmp_path: Path
) -> None:
    secret = tmp_path / ".consort" / "db" / "secret"
    secret.parent.mkdir(parents=True)
    secret.write_text("s3cret")
    now = datetime.now(UTC)
    ledger.record(_started("odd", "F1-x", now, timedelta(hours=1)), Actor.HUMAN, subject_of("odd"))
    ledger.record(_ended("odd", ".consort/db/secret"), Actor.HUMAN, subject_of("odd"))
    assert spike_notes_inputs(ledger.read(), "F1-x", tmp_path) == {}


def test_a_checkout_inside_a_projects_state_folder_is_never_a_project_of_its_own(
    tmp_path: Path,
) -> None:
    from consort.core.config import DEFAULT_CONFIG_TEXT
    from consort.core.project import find_project

    root = tmp_path / "shop"
    checkout = root / ".consort" / "worktrees" / "_spikes" / "cheat"
    for folder in (root, checkout):
        (folder / ".consort").mkdir(parents=True)
        (folder / "consort.toml").write_text(DEFAULT_CONFIG_TEXT, encoding="utf-8")
    assert find_project(checkout).root == root.resolve()
    assert find_project(checkout / ".consort").root == root.resolve()
    # A project that merely lives below some other folder named .consort is still itself.
    elsewhere = tmp_path / ".consort" / "mine"
    (elsewhere / ".consort").mkdir(parents=True)
    (elsewhere / "consort.toml").write_text(DEFAULT_CONFIG_TEXT, encoding="utf-8")
    assert find_project(elsewhere).root == elsewhere.resolve()
