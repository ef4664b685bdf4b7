"""The end of `consort drive`: an escalation is a stop waiting for a person, an interrupt says how
to resume, neither is worded as an error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from consort.app.errors import ExitCode
from consort.app.orchestrate import DriveOutcome
from consort.cli import ui
from consort.cli.drive_view import show_drive_outcome


@pytest.fixture(autouse=True)
def fresh_consoles() -> Iterator[None]:
    ui.console.cache_clear()
    ui.err_console.cache_clear()
    yield
    ui.console.cache_clear()
    ui.err_console.cache_clear()


def _shown(capsys: pytest.CaptureFixture[str], outcome: DriveOutcome) -> str:
    show_drive_outcome(outcome)
    printed = capsys.readouterr()
    return printed.out + printed.err


def test_an_escalation_is_a_stop_that_waits_for_a_person(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = _shown(
        capsys,
        DriveOutcome(
            ExitCode.ESCALATION,
            4,
            "green: the driver failed 4 times",
            'consort retry F1-greeting --note "..."',
            at_gate=False,
        ),
    )
    assert "error" not in shown
    assert "stopped: an escalation waits for a person (4 step(s) done)" in shown
    assert "green: the driver failed 4 times" in shown
    assert 'resolve: consort retry F1-greeting --note "..."' in shown


def test_an_interrupt_says_how_to_resume(capsys: pytest.CaptureFixture[str]) -> None:
    shown = _shown(
        capsys,
        DriveOutcome(ExitCode.INTERRUPTED, 0, "interrupted (Ctrl-C)", None, at_gate=False),
    )
    assert "error" not in shown
    assert "stopped: interrupted (Ctrl-C)" in shown
    assert "resume: consort drive" in shown


def test_an_integrity_stop_is_an_error_with_its_next_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = _shown(
        capsys,
        DriveOutcome(ExitCode.INTEGRITY, 0, "drifted", "consort approve design F1", False),
    )
    assert "consort: error: 0 step(s); drifted" in shown
    assert "next: consort approve design F1" in shown


def test_interrupts_exit_130() -> None:
    assert int(ExitCode.INTERRUPTED) == 130


def test_any_command_interrupted_exits_130_and_says_how_to_resume(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from consort.cli.kit import handled

    @handled
    def pressed_ctrl_c() -> None:
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as stopped:
        pressed_ctrl_c()
    assert stopped.value.code == 130
    said = capsys.readouterr().err
    assert "error" not in said
    assert "stopped: interrupted (Ctrl-C)" in said and "again to resume" in said
