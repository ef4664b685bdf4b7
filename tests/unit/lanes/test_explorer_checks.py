"""The checks of an explorer turn that need no server: its notes, its settings, and what
`consort verify` makes of the explorer turns the ledger records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from consort.core.errors import UsageError
from consort.core.ledger import Actor, Ledger, ledger_path
from consort.core.ledger.events import SpikeStarted, TurnFinished, TurnStarted
from consort.core.project import Project
from consort.core.spikes import check_name, expiry, subject_of
from consort.core.vocabulary import Role, SandboxUse, Step
from consort.lanes.explore import AgentChoice, explorer_settings, notes_problems
from consort.lanes.verify.spikes import verify_spikes


def test_explore_is_a_subcommand_not_a_spike_name() -> None:
    with pytest.raises(UsageError):
        check_name("explore")


def test_notes_the_explorer_changed_are_kept(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("## Learned\n\nA BRIN index halves the scan.\n")
    assert notes_problems(notes, before="# template\n") == []


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p.write_text("# template\n"), "unchanged"),
        (lambda p: p.write_text("   \n"), "unchanged"),
        (lambda p: p.write_bytes(b"\xff\xfe notes"), "not UTF-8"),
        (lambda p: p.write_text("x" * (256 * 1024 + 1)), "at most"),
        (lambda p: p.symlink_to(p.parent / "secret"), "a link"),
        (lambda p: p.mkdir(), "no notes.md"),
        (lambda p: None, "no notes.md"),
    ],
)
def test_notes_a_spike_could_not_keep_fail_the_turn(tmp_path: Path, make, reason: str) -> None:
    (tmp_path / "secret").write_text("s3cret\n")
    notes = tmp_path / "notes.md"
    make(notes)
    (problem,) = notes_problems(notes, before="# template\n")
    assert reason in problem


def _project(tmp_path: Path, agents: str) -> Project:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "consort.toml").write_text(agents)
    return Project(tmp_path)


def test_the_explorer_uses_its_own_table_and_the_persons_choice_over_it(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        '[agents]\ndefault = "command"\ncommand = ["python3", "a.py"]\n'
        '[agents.explorer]\nadapter = "claude"\nmodel = "small"\nwall_clock_timeout = 900\n',
    )
    own = explorer_settings(project, AgentChoice())
    assert own.role is Role.EXPLORER and own.adapter.value == "claude"
    assert own.model == "small" and own.wall_clock_timeout_s == 900
    chosen = explorer_settings(project, AgentChoice(adapter="codex", model="large"))
    assert chosen.adapter.value == "codex" and chosen.model == "large"
    plain = explorer_settings(_project(tmp_path / "p", ""), AgentChoice(adapter="command"))
    assert plain.adapter.value == "command"


def _spike_and_turn(tmp_path: Path, *, ttl: timedelta, ran_s: float) -> list:
    ledger = Ledger(ledger_path(tmp_path / ".consort"))
    now = datetime.now(UTC)
    started = SpikeStarted(
        name="box",
        feature=None,
        branch="spike/box",
        parent="main",
        database="spike_box",
        worktree=".consort/worktrees/_spikes/box",
        base_commit="a" * 40,
        ttl_s=ttl.total_seconds(),
        expires=expiry(now, ttl),
    )
    ledger.record(started, Actor.HUMAN, subject_of("box"))
    turn = TurnStarted(
        turn="0001-explorer-explore",
        role=Role.EXPLORER,
        step=Step.EXPLORE,
        attempt=1,
        sandbox=SandboxUse.BWRAP,
    )
    ledger.record(turn, Actor.ORCHESTRATOR, subject_of("box"))
    ended = TurnFinished(
        turn="0001-explorer-explore",
        role=Role.EXPLORER,
        step=Step.EXPLORE,
        attempt=1,
        exit_code=0,
        duration_s=ran_s,
        killed=None,
    )
    ledger.record(ended, Actor.ORCHESTRATOR, subject_of("box"))
    return list(ledger.read())


def test_verify_finds_an_explorer_turn_inside_its_time_box(tmp_path: Path) -> None:
    events = _spike_and_turn(tmp_path, ttl=timedelta(hours=1), ran_s=30)
    holds, fails = verify_spikes(Project(tmp_path), events)
    assert fails == []
    assert holds[-1] == "spikes: 1 explorer turns, each inside its spike's time box"


def test_verify_fails_an_explorer_turn_that_outran_its_time_box(tmp_path: Path) -> None:
    events = _spike_and_turn(tmp_path, ttl=timedelta(minutes=1), ran_s=3600)
    _, fails = verify_spikes(Project(tmp_path), events)
    assert len(fails) == 1 and "past the spike's time box" in fails[0]


def test_verify_fails_a_turn_of_another_step_under_a_spikes_subject(tmp_path: Path) -> None:
    ledger = Ledger(ledger_path(tmp_path / ".consort"))
    events = _spike_and_turn(tmp_path, ttl=timedelta(hours=1), ran_s=1)
    ledger.record(
        TurnStarted(turn="0002-driver-green", role=Role.DRIVER, step=Step.GREEN, attempt=1),
        Actor.ORCHESTRATOR,
        subject_of("box"),
    )
    _, fails = verify_spikes(Project(tmp_path), list(ledger.read()))
    assert events and fails == ["spike box: turn 0002-driver-green is not an explorer turn"]
