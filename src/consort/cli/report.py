"""`consort report`: durations and cost per lane, role and turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from consort.cli.kit import handled, project

if TYPE_CHECKING:
    from consort.app.report import Totals


def register(group: click.Group) -> None:
    group.add_command(report)


def _money(row: Totals) -> str:
    if not row.priced_turns:
        return "—"
    known = f"${row.cost_usd:.4f}"
    return known if row.priced_turns == row.turns else f"{known} ({row.priced_turns} priced)"


def _row(row: Totals) -> list[str]:
    return [
        row.name,
        str(row.turns),
        str(row.failed_turns),
        f"{row.agent_seconds:.1f} s",
        str(row.test_runs),
        f"{row.test_seconds:.1f} s",
        str(row.tokens or "—"),
        _money(row),
    ]


COLUMNS = ("", "turns", "failed", "agent time", "test runs", "test time", "tokens", "cost")


@click.command()
@click.option("--turns", "per_turn", is_flag=True, help="Also list every turn.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@handled
def report(per_turn: bool, as_json: bool) -> None:
    """Where the time and the money went: per lane, per role, and (with --turns) per turn.

    Agent time is the agents' processes; test time is Consort's own runs (migrations and the
    suite on throwaway databases). Tokens and cost are what the agent CLIs reported.
    """
    from consort.app import report as api
    from consort.cli import ui

    outcome = api.report(project())
    if as_json:
        ui.print_json(outcome.as_json())
        return
    ui.table("Per lane", COLUMNS, [_row(r) for r in outcome.lanes] + [_row(outcome.total)])
    ui.table(
        "Per role", COLUMNS[:4] + COLUMNS[6:], [_row(r)[:4] + _row(r)[6:] for r in outcome.roles]
    )
    if per_turn:
        rows = [
            [
                t["turn"],
                t["lane"],
                t["role"] or "?",
                f"{float(t['duration_s'] or 0):.1f} s",
                t["model"] or "—",
                str(t["tokens"] or "—"),
                "—" if t["cost_usd"] is None else f"${float(t['cost_usd']):.4f}",
                "yes" if t["ok"] else "no",
            ]
            for t in outcome.turns
        ]
        columns = ("turn", "lane", "role", "duration", "model", "tokens", "cost", "ok")
        ui.table("Per turn", columns, rows)
