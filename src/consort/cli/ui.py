"""Terminal output: Rich, imported only when something is printed.

On a terminal, text wraps at its width. Anywhere else (a pipe, a file, a CI log) nothing is
wrapped: a path or a suggested command must stay one line that a person can copy or a program
can read, whatever `COLUMNS` says.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# The width Rich lays out at when output is not a terminal: wider than any line Consort prints,
# so that nothing wraps (tables are as wide as their cells, never padded to this).
UNWRAPPED_WIDTH = 100_000


def _unwrapped_unless_terminal(console: Console) -> Console:
    if not console.is_terminal:
        console.width = UNWRAPPED_WIDTH
        console.soft_wrap = True
    return console


@cache
def console() -> Console:
    from rich.console import Console

    return _unwrapped_unless_terminal(Console(highlight=False))


@cache
def err_console() -> Console:
    from rich.console import Console

    return _unwrapped_unless_terminal(Console(stderr=True, highlight=False))


def say(text: str) -> None:
    console().print(text)


def step(line: str) -> None:
    """One progress line of a long command. Its text is Consort's own words, which name
    `consort.toml` tables ("[db] binaries") that must not be read as console markup."""
    from rich.markup import escape

    console().print(f"[dim]>[/dim] {escape(line)}")


def done(text: str) -> None:
    """A line of what was done, in Consort's words (which name tables such as "[test.env]")."""
    from rich.markup import escape

    console().print(f"[green]✓[/green] {escape(text)}")


def warn(text: str) -> None:
    from rich.markup import escape

    err_console().print(f"[yellow]![/yellow] {escape(text)}")


def error(text: str, fix: str | None = None) -> None:
    from rich.markup import escape

    err_console().print(f"[red]consort: error:[/red] {escape(text)}")
    if fix:
        err_console().print(f"  [dim]fix:[/dim] {escape(fix)}")


def stopped(text: str, then: Sequence[str] = ()) -> None:
    """A stop that is not an error: it waits for a person (an escalation) or was asked for (an
    interrupt). `then` are the lines saying what the person can do now."""
    from rich.markup import escape

    err_console().print(f"[yellow]consort: stopped:[/yellow] {escape(text)}")
    for line in then:
        err_console().print(f"  {escape(line)}")


def megabytes(size: int | None) -> str:
    """A database's size in a table cell ("-": no database, or its size is not known)."""
    if size is None:
        return "-"
    return f"{size / 1_048_576:.1f} MB"


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


@dataclass(frozen=True)
class Col:
    """A column of `table`. A `whole` column (a branch name, an id) is never cut, wrapped or
    folded: on a narrow terminal the other columns fold to make room for it."""

    header: str
    whole: bool = False


def table(title: str | None, columns: Sequence[str | Col], rows: Sequence[Sequence[str]]) -> None:
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    grid = Table(title=title, title_justify="left")
    for index, column in enumerate(columns):
        col = column if isinstance(column, Col) else Col(column)
        if col.whole:
            widest = max((cell_len(Text.from_markup(row[index]).plain) for row in rows), default=0)
            grid.add_column(col.header, no_wrap=True, min_width=max(widest, cell_len(col.header)))
        else:
            grid.add_column(col.header, overflow="fold")
    for row in rows:
        grid.add_row(*row)
    console().print(grid)
