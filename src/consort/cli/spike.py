"""`consort spike NAME [--for F] [--ttl 2h] [--question Q]`, `consort spike explore|end|list|gc`."""

from __future__ import annotations

from typing import Any

import click

from consort.cli.kit import LazyChoice, handled, project

SUBCOMMANDS = ("start", "explore", "end", "list", "gc")


class _SpikeGroup(click.Group):
    """`consort spike NAME ...` is `consort spike start NAME ...`: a first word that is not a
    subcommand (or an option) names a spike to start."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["start", *args]
        return super().parse_args(ctx, args)


def register(group: click.Group) -> None:
    group.add_command(spike)


@click.group(cls=_SpikeGroup)
def spike() -> None:
    """Spikes: throwaway explorations on a paired branch, outside the gated loop.

    `consort spike NAME [--for F] [--ttl 2h]` starts one: a worktree and its own copy of the
    parent's database (feature F's, or the checked-out branch's). When it ends (`consort spike
    end NAME`, or its time box runs out) code and database are removed; its notes.md is kept
    under .consort/spikes/NAME/ and given to F's later design and build turns.

    `consort spike explore NAME "QUESTION"` (or `--question` at the start) has Consort run an
    explorer agent turn in the spike: sandboxed in its worktree, with a scratch copy of the
    spike's database, stopped when the time box runs out, writing what it learned to notes.md.
    """


def _agent_options(func: Any) -> Any:
    func = click.option(
        "--model", help="The explorer's model (claude, codex), over [agents.explorer] model."
    )(func)
    return click.option(
        "--agent",
        "adapter",
        type=LazyChoice(_agent_adapters),  # read when used: the agents' models load then
        help="The explorer's adapter, over [agents.explorer] (or [agents] default).",
    )(func)


def _agent_adapters() -> tuple[str, ...]:
    from consort.app.spike import agent_adapters

    return agent_adapters()


@spike.command("start")
@click.argument("name")
@click.option("--for", "feature", help="The feature the spike explores for (e.g. F1).")
@click.option("--ttl", help="The time box: 2h (default), 90m, 1h30m, 1d; at most 7d.")
@click.option(
    "--question", help="Have Consort run an explorer agent turn in the spike, on this question."
)
@_agent_options
@click.option("--json", "as_json", is_flag=True, help="Print the spike as JSON.")
@handled
def spike_start(
    *,
    name: str,
    feature: str | None,
    ttl: str | None,
    question: str | None,
    adapter: str | None,
    model: str | None,
    as_json: bool,
) -> None:
    """Start spike NAME (the same as `consort spike NAME`)."""
    from consort.app import spike as api
    from consort.cli import ui

    if question is None and (adapter or model):
        raise click.UsageError("--agent and --model choose the explorer: give --question too")
    here = project()
    with ui.console().status(f"starting spike {name} ..."):
        started = api.start(here, name, feature, ttl)
    s = started.spike
    if not as_json:
        ui.done(
            f"started spike {name} on {s.branch} with database {s.database} "
            f"(a copy of {s.parent}'s); it expires at {_when(s.expires)}"
        )
    if question is not None:
        _explore(
            here,
            name,
            question,
            adapter=adapter,
            model=model,
            as_json=as_json,
            started=started.as_json(),
        )
        return
    if as_json:
        ui.print_json(started.as_json())
        return
    ui.say(f"explore in {s.worktree} (its .env points at the spike's database)")
    ui.say(f"write what you learn in {started.notes}; end it with `consort spike end {name}`")
    ui.say(f'or have an agent explore it: `consort spike explore {name} "QUESTION"`')


@spike.command("explore")
@click.argument("name")
@click.argument("question")
@_agent_options
@click.option("--json", "as_json", is_flag=True, help="Print the explorer's turn as JSON.")
@handled
def spike_explore(
    name: str, question: str, adapter: str | None, model: str | None, as_json: bool
) -> None:
    """Run an explorer agent turn in spike NAME on QUESTION, inside the spike's time box."""
    _explore(project(), name, question, adapter=adapter, model=model, as_json=as_json)


def _explore(
    here: Any,
    name: str,
    question: str,
    *,
    adapter: str | None,
    model: str | None,
    as_json: bool,
    started: dict[str, Any] | None = None,
) -> None:
    from consort.app import spike as api
    from consort.app.errors import ConsortError
    from consort.cli import ui

    with ui.console().status(f"exploring in spike {name} ..."):
        found = api.explore(here, name, question, adapter=adapter, model=model)
    if as_json:
        shown = found.as_json() if started is None else {**started, "exploration": found.as_json()}
        ui.print_json(shown)
    else:
        for problem in found.problems:
            ui.say(f"  {problem}")
        if found.ok:
            ui.done(f"explorer turn {found.turn} wrote {found.notes} ({found.duration_s:.0f} s)")
        if found.ended is not None:
            _say_ended(found.ended)
    if not found.ok:
        raise ConsortError(
            f"explorer turn {found.turn} in spike {name} failed",
            fix=f"see .consort/turns/{found.turn}/ (stdout, stderr, result.json)",
        )


@spike.command("end")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print what was removed and kept as JSON.")
@handled
def spike_end(name: str, as_json: bool) -> None:
    """End spike NAME: remove its worktree, branch and database; keep its notes."""
    from consort.app import spike as api
    from consort.cli import ui

    ended = api.end(project(), name)
    if as_json:
        ui.print_json(ended.as_json())
        return
    _say_ended(ended)


@spike.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the spikes as JSON.")
@handled
def spike_list(as_json: bool) -> None:
    """List spikes; those whose time box ran out are ended first (their notes kept)."""
    from consort.app import spike as api
    from consort.cli import ui

    found = api.list_spikes(project())
    if as_json:
        ui.print_json(found.as_json())
        return
    for ended in found.collected:
        _say_ended(ended)
    if found.busy:
        ui.say(f"expired spikes are left for now: {found.busy}")
    if not found.spikes:
        ui.say("no spikes yet; start one with `consort spike NAME`")
        return
    ui.table(
        None,
        [ui.Col("spike", whole=True), "for", "state", "expires", ui.Col("notes", whole=True)],
        [
            [
                s.name,
                s.feature or "-",
                s.condition(found.now).value,
                _when(s.expires),
                s.notes or f"{s.worktree}/notes.md",
            ]
            for s in found.spikes
        ],
    )


@spike.command("gc")
@handled
def spike_gc() -> None:
    """End every spike whose time box has run out (their notes are kept)."""
    from consort.app import spike as api
    from consort.cli import ui

    ended = api.gc(project())
    for one in ended:
        _say_ended(one)
    if not ended:
        ui.say("no spike has expired")


def _say_ended(ended: Any) -> None:
    from consort.cli import ui

    why = "ran out of time" if ended.reason.value == "expired" else "ended"
    kept = f"its notes are kept in {ended.notes}" if ended.notes else "it left no notes.md"
    ui.done(f"spike {ended.name} {why}: worktree, branch and database removed; {kept}")


def _when(moment: Any) -> str:
    return str(moment.strftime("%Y-%m-%d %H:%M UTC"))
