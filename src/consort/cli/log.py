"""`consort log`: the ledger, readably, with filters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from consort.cli.kit import handled, project

if TYPE_CHECKING:
    from consort.app.log import LogEntry
    from consort.cli.table import Column

SUMMARY_WIDTH = 100


def register(group: click.Group) -> None:
    group.add_command(log)


@click.command("log")
@click.option("--feature", help="Only events about feature F (its subject is F or F/...).")
@click.option("--role", help="Only events of role R (their data names the role).")
@click.option(
    "--type",
    "event_type",
    help="Only events of this type, or of a family of types: `gate` matches gate.approved, ...",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the last N matching events.")
@click.option("--json", "as_json", is_flag=True, help="Print the events as a JSON array.")
@handled
def log(
    feature: str | None,
    role: str | None,
    event_type: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """Show the ledger: every event Consort recorded, oldest first.

    If the ledger does not verify, shows what still parses, warns, and exits with code 4.
    """
    from consort.app import log as api
    from consort.cli import ui

    report = api.read_log(project(), api.LogFilter(feature, role, event_type, limit))
    if as_json:
        ui.print_json(report.as_json())
    elif report.entries:
        _print_table(report.entries)
    elif report.total:
        ui.say("no events match")
    else:
        ui.say("the ledger is empty")
    for problem in report.problems:
        ui.warn(f"ledger {problem}")
    report.require_intact()


def summary(data: dict[str, Any], width: int = SUMMARY_WIDTH) -> str:
    """`key=value` pairs of an event's data on one line, cut to `width` characters."""
    import json

    parts = []
    for key in sorted(data):
        value = data[key]
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}={' '.join(shown.split())}")
    text = " ".join(parts)
    return text if len(text) <= width else text[: width - 1] + "…"


def _print_table(events: list[LogEntry]) -> None:
    from consort.cli import plain, ui
    from consort.cli.plain import escape
    from consort.cli.table import GAP, Column

    # Only the data summary wraps, so the short columns stay whole while the terminal has room
    # for them. The year is left out to save width (`--json` has it).
    columns = [Column("seq", justify="right"), *map(Column, ("UTC", "actor", "type", "subject"))]
    rows = [
        [
            str(event.seq),
            event.time.strftime("%m-%d %H:%M:%S"),
            event.actor,
            event.type,
            plain.visible(escape(event.subject or "-")),
            plain.visible(escape(summary(event.data))),
        ]
        for event in events
    ]
    if ui.plain_output():
        # Unwrapped, no column gives way to the data: `narrowed` would keep them all.
        everything = [*columns, Column("data")]
        text = plain.borderless_table(
            [(c.header, c.justify) for c in everything],
            rows,
            gap=GAP,
            max_width=ui.UNWRAPPED_WIDTH - MIN_DATA_ROOM,
        )
        if text is not None:
            ui.write_rendered(text)
            return
    from consort.cli.table import print_table

    shown, cells = narrowed(columns, rows, ui.console().width)
    print_table(ui.console(), [*shown, Column("data")], cells)


MIN_DATA_ROOM = 24  # the data column's least width before the columns to its left give way
KEPT_COLUMNS = 2  # seq and time are never given up


def narrowed(
    columns: list[Column], rows: list[list[str]], width: int
) -> tuple[list[Column], list[list[str]]]:
    """On a narrow terminal, move the one-line columns from the right (subject, type, actor)
    into the wrapping data column, one at a time, until the rest fit with room for data: seq
    and time stay in their columns at any width where they fit at all."""
    from rich.cells import cell_len
    from rich.text import Text

    from consort.cli.table import GAP

    shown = list(columns)
    cells = [list(row) for row in rows]
    while len(shown) > KEPT_COLUMNS:
        widths = [
            max(
                cell_len(Text.from_markup(cell).plain)
                for cell in (c.header, *(r[i] for r in cells))
            )
            for i, c in enumerate(shown)
        ]
        if sum(widths) + GAP * len(shown) + MIN_DATA_ROOM <= width:
            break
        shown.pop()
        cells = [[*row[: len(shown)], " ".join(p for p in row[len(shown) :] if p)] for row in cells]
    return shown, cells
