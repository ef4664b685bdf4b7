"""`consort log`: the ledger, readably, with filters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from consort.cli.kit import handled

if TYPE_CHECKING:
    from collections.abc import Iterable

    from consort.core.ledger import Event

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
    from consort.cli import ui
    from consort.core.ledger import Ledger, LedgerCorrupt, ledger_path
    from consort.core.project import find_project

    report = Ledger(ledger_path(find_project().state_dir)).verify()
    events = select(report.events, feature=feature, role=role, event_type=event_type)
    if limit is not None:
        events = events[-limit:]
    if as_json:
        ui.print_json([event.as_json() for event in events])
    elif events:
        _print_table(events)
    elif report.events:
        ui.say("no events match")
    else:
        ui.say("the ledger is empty")
    if not report.ok:
        for problem in report.problems:
            ui.warn(f"ledger {problem}")
        raise LedgerCorrupt(report.path, report.problems)


def select(
    events: Iterable[Event],
    *,
    feature: str | None = None,
    role: str | None = None,
    event_type: str | None = None,
) -> list[Event]:
    """The events that pass every filter given."""
    family = event_type.rstrip(".") + "." if event_type else None
    return [
        event
        for event in events
        if (feature is None or event.subject == feature or event.subject.startswith(feature + "/"))
        and (role is None or event.data.get("role") == role)
        and (
            event_type is None
            or event.type.value == event_type
            or (family is not None and event.type.value.startswith(family))
        )
    ]


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


def _print_table(events: list[Event]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from consort.cli import ui

    # Only the data summary wraps: Rich narrows wrappable columns first, so the short columns
    # stay whole on a narrow terminal. The year is left out to save width (`--json` has it).
    grid = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold")
    for name in ("seq", "UTC", "actor", "type", "subject"):
        grid.add_column(name, no_wrap=True, justify="right" if name == "seq" else "left")
    grid.add_column("data")
    for event in events:
        grid.add_row(
            str(event.seq),
            event.time.strftime("%m-%d %H:%M:%S"),
            event.actor.value,
            event.type.value,
            escape(event.subject or "-"),
            escape(summary(event.data)),
        )
    ui.console().print(grid)
