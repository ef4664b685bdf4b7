"""Terminal output: Rich, imported only when something is printed.

On a terminal, text wraps at its width. Anywhere else (a pipe, a file, a CI log) nothing is
wrapped: a path or a suggested command must stay one line that a person can copy or a program
can read, whatever `COLUMNS` says. There, lines and tables are written by `cli.plain`, as Rich
would write them, without importing Rich (what it cannot be sure of still goes through Rich).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from consort.cli import plain

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


def plain_output(stderr: bool = False) -> bool:
    """Whether stdout (stderr) is no terminal, so that `cli.plain` may write to it."""
    return plain.is_plain(sys.stderr if stderr else sys.stdout)


def write_rendered(text: str, *, stderr: bool = False) -> None:
    """Write text `cli.plain` rendered (no markup left in it)."""
    stream = sys.stderr if stderr else sys.stdout
    stream.write(text)
    stream.flush()  # as Rich does after each print: stdout and stderr keep their order


def _print(markup: str, *, stderr: bool = False) -> None:
    """Print console markup and a newline, as Rich prints it; what a terminal would act on
    instead of showing is shown as its escape (`plain.visible`)."""
    markup = plain.visible(markup)
    text = plain.line(markup) if plain_output(stderr) else None
    if text is not None:
        write_rendered(text, stderr=stderr)
    else:
        (err_console() if stderr else console()).print(markup)


def say(text: str) -> None:
    _print(text)


def step(line: str) -> None:
    """One progress line of a long command. Its text is Consort's own words, which name
    `consort.toml` tables ("[db] binaries") that must not be read as console markup."""
    _print(f"[dim]>[/dim] {plain.escape(line)}")


def done(text: str) -> None:
    """A line of what was done, in Consort's words (which name tables such as "[test.env]")."""
    _print(f"[green]✓[/green] {plain.escape(text)}")


def warn(text: str) -> None:
    _print(f"[yellow]![/yellow] {plain.escape(text)}", stderr=True)


def error(text: str, fix: str | None = None) -> None:
    _print(f"[red]consort: error:[/red] {plain.escape(text)}", stderr=True)
    if fix:
        _print(f"  [dim]fix:[/dim] {plain.escape(fix)}", stderr=True)


def stopped(text: str, then: Sequence[str] = ()) -> None:
    """A stop that is not an error: it waits for a person (an escalation) or was asked for (an
    interrupt). `then` are the lines saying what the person can do now."""
    _print(f"[yellow]consort: stopped:[/yellow] {plain.escape(text)}", stderr=True)
    for line in then:
        _print(f"  {plain.escape(line)}", stderr=True)


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
    title = plain.visible(title) if title is not None else None
    rows = [[plain.visible(cell) for cell in row] for row in rows]
    if plain_output() and plain.draws_boxes(sys.stdout):
        headers = [c.header if isinstance(c, Col) else c for c in columns]
        text = plain.boxed_table(title, headers, rows, UNWRAPPED_WIDTH)
        if text is not None:
            write_rendered(text)
            return
    print_table(console(), title, columns, rows)


def print_table(
    out: Console, title: str | None, columns: Sequence[str | Col], rows: Sequence[Sequence[str]]
) -> None:
    """`table`, printed by Rich on `out`."""
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
    out.print(grid)
