"""Terminal output: Rich, imported only when something is printed."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


@cache
def console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


@cache
def err_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def say(text: str) -> None:
    console().print(text)


def done(text: str) -> None:
    console().print(f"[green]✓[/green] {text}")


def warn(text: str) -> None:
    err_console().print(f"[yellow]![/yellow] {text}")


def error(text: str, fix: str | None = None) -> None:
    from rich.markup import escape

    err_console().print(f"[red]consort: error:[/red] {escape(text)}")
    if fix:
        err_console().print(f"  [dim]fix:[/dim] {escape(fix)}")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    from rich.table import Table

    grid = Table(title=title, title_justify="left")
    for column in columns:
        grid.add_column(column)
    for row in rows:
        grid.add_row(*row)
    console().print(grid)
