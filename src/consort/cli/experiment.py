"""`consort experiment F/S --approaches N`, `consort experiment compare|select|discard F/S`."""

from __future__ import annotations

from typing import Any

import click

from consort.cli.kit import handled, project


class _ExperimentGroup(click.Group):
    """`consort experiment F/S ...` is `consort experiment run F/S ...`: a first word that is
    not a subcommand (or an option) names the story to race."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["run", *args]
        return super().parse_args(ctx, args)


def register(group: click.Group) -> None:
    group.add_command(experiment)


@click.group(cls=_ExperimentGroup)
def experiment() -> None:
    """Experiments: several approaches to one cycle's GREEN, raced against the same RED tests.

    `consort experiment F1/S1 --approaches 3` races the drivers of the story's current cycle
    (after driving its branch and RED, when those come next), each approach on its own paired
    branch with its own driver settings ([experiment.approaches.NAME] in consort.toml) and budget.
    `compare` shows them side by side with a recommendation; `select` (a person only) keeps one
    as the story's GREEN; `discard` keeps none.
    """


@experiment.command("run")
@click.argument("story")
@click.option(
    "--approaches", "count", type=int, default=None, help="How many approaches to race (2-8)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@handled
def experiment_run(story: str, count: int | None, as_json: bool) -> None:
    """Race approaches to STORY's current cycle (the same as `consort experiment STORY`)."""
    from consort.app import experiment as api
    from consort.cli import ui

    here = project()
    wanted = count or len(here.config.experiment.approaches) or 2
    # With --json, stdout is the comparison alone; progress goes to stderr.
    result = api.run(here, story, wanted, progress=_to_stderr if as_json else ui.step)
    if as_json:
        ui.print_json(result.as_json())
        return
    _show(result.comparison, story)


@experiment.command("compare")
@click.argument("story")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@handled
def experiment_compare(story: str, as_json: bool) -> None:
    """The story's latest experiment side by side, with the recommendation."""
    from consort.app import experiment as api
    from consort.cli import ui

    found = api.compare(project(), story)
    if as_json:
        ui.print_json(found.as_json())
        return
    _show(found, story)


@experiment.command("select")
@click.argument("story")
@click.argument("name")
@click.option("--note", help="Why this approach.")
@click.option("--json", "as_json", is_flag=True, help="Print what was kept and archived as JSON.")
@handled
def experiment_select(story: str, name: str, note: str | None, as_json: bool) -> None:
    """Keep approach NAME: its GREEN becomes the story's; the others are archived."""
    from consort.app import experiment as api
    from consort.cli import ui

    chosen = api.select(project(), story, name, note)
    if as_json:
        ui.print_json(chosen.as_json())
        return
    ui.done(f"{chosen.subject}: approach {name}'s GREEN is the story's now")
    _say_closed(chosen)
    ui.say("`consort drive` goes on with the cycle's review")


@experiment.command("discard")
@click.argument("story")
@click.option("--note", help="Why no approach is kept.")
@click.option("--json", "as_json", is_flag=True, help="Print what was archived as JSON.")
@handled
def experiment_discard(story: str, note: str | None, as_json: bool) -> None:
    """Keep no approach: all are archived; `consort drive` builds the GREEN as usual."""
    from consort.app import experiment as api
    from consort.cli import ui

    dropped = api.discard(project(), story, note)
    if as_json:
        ui.print_json(dropped.as_json())
        return
    ui.done(f"{dropped.subject}: no approach kept")
    _say_closed(dropped)


def _to_stderr(line: str) -> None:
    from rich.markup import escape

    from consort.cli import ui

    ui.err_console().print(f"> {escape(line)}")


def _say_closed(result: object) -> None:
    from consort.app.experiment import Selection
    from consort.cli import ui

    if not isinstance(result, Selection):
        return
    if result.payload.archived:
        ui.say("archived until `consort branch gc`: " + ", ".join(result.payload.archived))
    if result.payload.dropped:
        ui.say("databases dropped: " + ", ".join(result.payload.dropped))


def _show(found: object, story: str) -> None:
    from consort.app.experiment import Comparison

    if isinstance(found, Comparison):
        render_comparison(found.as_json())
    del story


def render_comparison(found: dict[str, Any]) -> None:
    """One experiment's approaches side by side, from its JSON (`compare`, and `status`)."""
    from consort.cli import ui

    note = found["concurrency_note"]
    ui.say(
        f"experiment {found['experiment']} on {found['subject']} ({found['condition']}; "
        f"{found['concurrency']} at a time)" + (f": {note}" if note else "")
    )
    rows = found["approaches"]
    ui.table(
        None,
        [
            ui.Col("approach", whole=True),
            "outcome",
            "tests",
            "cycles",
            "repairs",
            "violations",
            "findings",
            "lines +/-",
            "schema",
            "seconds",
            "cost",
        ],
        [
            [
                r["name"],
                r["outcome"],
                f"{r['tests_passed']}/{r['tests_total']}",
                str(r["cycles"]),
                str(r["repairs"]),
                str(r["violations"]),
                str(r["findings"]),
                f"+{r['lines_added']}/-{r['lines_removed']}",
                str(len(r["schema_changes"])),
                f"{r['seconds']:.1f}",
                "-" if r["cost_usd"] is None else f"${r['cost_usd']:.4f}",
            ]
            for r in rows
        ],
    )
    for row in rows:
        for change in row["schema_changes"]:
            ui.say(f"  {row['name']} schema: {change}")
        if row["outcome"] != "passed" and row["message"]:
            ui.say(f"  {row['name']}: {row['message']}")
    advice = found["recommendation"]
    ui.say("recommendation: " + advice["kind"] + " — " + "; ".join(advice["reasons"]))
    if found["selected"]:
        ui.done(f"selected: {found['selected']}")
    elif advice["winner"]:
        ui.say(f"keep it with `{found['commands'][0]}`")
    elif advice["candidates"]:
        ui.say(f"pick one of {', '.join(advice['candidates'])}: `{found['commands'][0]}`")
    elif found["condition"] == "waiting":
        ui.say(f"keep none with `{found['commands'][0]}`")
    elif found["commands"]:
        ui.say(f"resume the approaches not ended with `{found['commands'][0]}`")
