"""The command-line front end: one click group; every command lives in a module of its topic.

Each module defines `register(group)` and imports only click (and `cli.kit`) at module level;
the command API (`consort.app`), Rich and everything heavy are imported inside the commands, so
that `consort --version` and `--help` start fast. A command's module is imported when the command
is asked for (`Commands`).
"""

from __future__ import annotations

import importlib

import click

from consort import __version__

# Each command module and the commands its `register(group)` adds, so that a command imports
# its own module alone (`tests/unit/cli/test_start_up_imports.py` checks the names).
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "consort.cli.setup": ("init", "doctor"),
    "consort.cli.db": ("db",),  # db start|stop|status|destroy|url|gc
    "consort.cli.branch": ("branch",),  # branch create|list|switch|delete|diff|gc
    "consort.cli.hook": ("hook",),  # hook post-checkout (hidden: git calls it)
    "consort.cli.orchestrate": (
        *("intake", "drive", "next", "status"),
        *("approve", "reject", "retry", "amend"),
    ),
    "consort.cli.verify": ("verify",),
    "consort.cli.suite": ("test",),
    "consort.cli.spike": ("spike",),  # spike NAME, spike end|list|gc
    "consort.cli.experiment": ("experiment",),
    "consort.cli.log": ("log",),
    "consort.cli.report": ("report",),
    "consort.cli.schema": ("schema",),
    "consort.cli.guard": ("guard", "update-agents"),
    "consort.cli.demo": ("demo",),
    "consort.cli.frontends": ("mcp", "dashboard"),
}
MODULE_OF = {name: module for module, names in COMMAND_MODULES.items() for name in names}


class Commands(click.Group):
    """The group that imports a command's module when the command is asked for: `consort
    status` loads `cli.orchestrate` alone. `--help`, completion and an unknown name (whose error
    suggests the names near it) load them all."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(MODULE_OF))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            module = MODULE_OF.get(cmd_name)
            for name in COMMAND_MODULES if module is None else (module,):
                if COMMAND_MODULES[name][0] not in self.commands:
                    importlib.import_module(name).register(self)
        return super().get_command(ctx, cmd_name)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="consort")
def cli() -> None:
    """Consort: agents write the code, a program decides every step, tests on real Postgres
    decide when it is done.

    Start with `consort init`, then `consort doctor` to see what runs where.
    """


def main() -> None:
    cli(prog_name="consort")
