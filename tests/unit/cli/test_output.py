"""What a person sees: nothing wraps outside a terminal; on an 80-column terminal the log keeps
its seq and time, and branch names are never cut."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from rich.console import Console

from consort.adapters.branch_rows import BranchRow, Pairing
from consort.app.log import LogEntry
from consort.app.status import StatusReport, StoryLine
from consort.cli import log, ui
from consort.cli.branch import render_rows
from consort.cli.status_view import render_status

LONG_PATH = "/home/someone/projects/" + "a-rather-long-folder-name/" * 6 + "consort.toml"
STORY_BRANCH = "story/F1-greeting-counter/S1-greet-by-name"
FEATURE_BRANCH = "feature/F1-greeting-counter"


@pytest.fixture
def piped(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """stdout and stderr are pipes (not terminals), and COLUMNS says 80."""
    monkeypatch.setenv("COLUMNS", "80")
    ui.console.cache_clear()
    ui.err_console.cache_clear()
    yield
    ui.console.cache_clear()
    ui.err_console.cache_clear()


def terminal(monkeypatch: pytest.MonkeyPatch, width: int = 80) -> io.StringIO:
    out = io.StringIO()
    screen = Console(file=out, width=width, force_terminal=True, color_system=None)
    monkeypatch.setattr(ui, "console", lambda: screen)
    monkeypatch.setattr(ui, "plain_output", lambda stderr=False: False)  # Rich's to draw
    return out


@pytest.mark.usefixtures("piped")
def test_nothing_wraps_when_output_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    ui.say(f"next: cd {LONG_PATH} && consort drive --feature F1-greeting-counter")
    ui.error(f"cannot read {LONG_PATH}", fix=f"edit {LONG_PATH} and run `consort drive` again")
    ui.table(None, ["", "branch", "database"], [["*", STORY_BRANCH, "db_" + "x" * 90]])
    printed = capsys.readouterr()
    lines = printed.out.splitlines() + printed.err.splitlines()
    assert f"next: cd {LONG_PATH} && consort drive --feature F1-greeting-counter" in lines
    assert f"consort: error: cannot read {LONG_PATH}" in lines
    assert f"  fix: edit {LONG_PATH} and run `consort drive` again" in lines
    (row,) = (line for line in lines if STORY_BRANCH in line)
    assert "db_" + "x" * 90 in row


def _branch(name: str, parent: str | None, current: bool = False) -> BranchRow:
    database = "consort_" + name.replace("/", "_").replace("-", "_").lower() + "_3f2a9c"
    return BranchRow(name, database, parent, Pairing.PAIRED, current, 7_864_320, None)


BRANCHES = [
    _branch("main", None),
    _branch(FEATURE_BRANCH, "main"),
    _branch(STORY_BRANCH, FEATURE_BRANCH, current=True),
]


def test_branch_list_never_cuts_a_branch_name_on_an_80_column_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = terminal(monkeypatch)
    render_rows(BRANCHES)
    printed = out.getvalue()
    assert max(map(len, printed.splitlines())) <= 80
    assert STORY_BRANCH in printed
    assert printed.count(FEATURE_BRANCH) == 2  # as a branch and as the story's parent


def test_status_never_cuts_a_branch_name_on_an_80_column_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = terminal(monkeypatch)
    report = StatusReport(
        stories=[
            StoryLine(
                "F1-greeting-counter", "S1-greet-by-name", STORY_BRANCH, 1, 3, "T2 green", "open"
            )
        ],
        branches=[b.as_json() for b in BRANCHES],
    )
    render_status(report)
    printed = out.getvalue()
    assert max(map(len, printed.splitlines())) <= 80
    assert STORY_BRANCH in printed
    assert printed.count(FEATURE_BRANCH) == 2
    assert "S1-greet-by-name" in printed


def test_status_shows_each_branch_database_size_as_branch_list_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = terminal(monkeypatch, width=200)
    render_status(StatusReport(branches=[b.as_json() for b in BRANCHES]))
    status = out.getvalue().splitlines()
    out.truncate(0)
    out.seek(0)
    render_rows(BRANCHES)
    listed = out.getvalue().splitlines()
    (header,) = (line for line in status if " branch " in line)
    assert [cell.strip() for cell in header.split("┃")][-2] == "size"
    for branch in BRANCHES:
        (row,) = (line for line in status if _cells(line)[2:3] == [branch.name])
        (listed_row,) = (line for line in listed if _cells(line)[2:3] == [branch.name])
        assert _cells(row)[-2] == "7.5 MB" and "7.5 MB" in _cells(listed_row)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("│")]


def _entry(seq: int, subject: str, kind: str, data: dict[str, object]) -> LogEntry:
    return LogEntry(
        seq=seq,
        time=datetime(2026, 12, 1, 10, 30, 40, tzinfo=UTC),
        actor="orchestrator",
        type=kind,
        subject=subject,
        data=data,
        record={},
    )


@pytest.mark.parametrize("width", [80, 60])
def test_the_log_keeps_seq_and_time_on_a_narrow_terminal(
    monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    out = terminal(monkeypatch, width)
    entries = [
        _entry(7, "F1-greeting-counter", "drive.started", {"until": None}),
        _entry(
            1234,
            "F1-greeting-counter/S1-greet-by-name/T3",
            "escalation.resolved",
            {"note": "try the simpler query " * 5, "step": "green"},
        ),
    ]
    log._print_table(entries)
    lines = out.getvalue().splitlines()
    assert max(map(len, lines)) <= width
    assert lines[0].split()[:2] == ["seq", "UTC"]
    starts = [line.split()[:3] for line in lines[1:] if line[:6].strip()]
    assert starts == [["7", "12-01", "10:30:40"], ["1234", "12-01", "10:30:40"]]
    if width >= 80:
        assert "F1-greeting-counter/S1-greet-by-name/T3" in out.getvalue()


def test_status_shows_the_gates_up_to_the_first_one_not_approved() -> None:
    from consort.app.status import FeatureLine
    from consort.cli.status_view import gates_cell

    def line(design: str, deploy: str = "not reached", promote: str = "not reached") -> FeatureLine:
        return FeatureLine("F1-x", "X", "design", design, "run-turn", {}, deploy, promote)

    assert gates_cell(line("not reached")) == "design not reached"
    assert gates_cell(line("approved")) == "design approved; deploy not reached"
    assert gates_cell(line("approved", "approved", "open")) == (
        "design approved; deploy approved; promote open"
    )


def test_progress_lines_keep_the_consort_toml_tables_they_name(
    piped: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ui.step('set [db] binaries = "system" in consort.toml, then [bold]consort init[/bold]')
    assert capsys.readouterr().out == (
        '> set [db] binaries = "system" in consort.toml, then [bold]consort init[/bold]\n'
    )
