"""cli/table.py prints what Rich's Table prints, byte for byte, at every terminal width."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.markup import escape

from consort.cli.table import Column, print_table, rich_table

COLUMNS = [
    Column("seq", justify="right"),
    Column("UTC"),
    Column("actor"),
    Column("type"),
    Column("subject"),
    Column("data"),
]


def _row(seq: int, subject: str, data: str) -> list[str]:
    return [str(seq), "12-01 10:30:40", "orchestrator", "turn.finished", escape(subject), data]


LEDGER_LIKE = [
    _row(1, "project", escape("consort=0.1.0")),
    _row(2, "F1-stock-visibility", escape("kind=feature-spec role=spec-author step=spec")),
    _row(
        13,
        "F1-stock-visibility/S1-file-stock/T3",
        escape("exit_code=0 run=" + "x" * 150 + ' note="a long note, wrapped over lines"'),
    ),
    _row(140, "F1-stock-visibility/S2-stock-by-location", ""),
]
AWKWARD = [
    *LEDGER_LIKE,
    _row(7, "[b]not bold[/b] :smile:", escape("[red]literal[/] :warning: ") + "w" * 300),
    _row(12345, "日本語", escape("日本語テキスト " * 12)),
    _row(8, "-", "plain words " * 40),
]


def _printed(width: int, terminal: bool, draw: object) -> str:
    console = Console(
        file=io.StringIO(),
        width=width,
        highlight=False,
        force_terminal=terminal,
        color_system="standard" if terminal else None,
    )
    draw(console)  # type: ignore[operator]
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("rows", [LEDGER_LIKE, AWKWARD, LEDGER_LIKE[:1], []])
@pytest.mark.parametrize("terminal", [False, True])
def test_the_table_is_rich_s_table_at_every_width(rows: list[list[str]], terminal: bool) -> None:
    differ = [
        width
        for width in range(1, 241)
        if _printed(width, terminal, lambda c: print_table(c, COLUMNS, rows))
        != _printed(width, terminal, lambda c: c.print(rich_table(COLUMNS, rows)))
    ]
    assert differ == []


def test_a_wide_terminal_takes_the_one_pass_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above would hold trivially if every width fell back to Rich's Table."""
    from consort.cli import table

    def refuse(*_args: object) -> None:
        raise AssertionError("fell back to Rich's Table")

    monkeypatch.setattr(table, "rich_table", refuse)
    out = _printed(200, False, lambda c: print_table(c, COLUMNS, AWKWARD))
    assert "F1-stock-visibility/S2-stock-by-location" in out
    assert out.splitlines()[0].split() == [c.header for c in COLUMNS]
