"""The command-line front end: one click group; every command lives in a module of its topic.

Each module defines `register(group)` and imports only click (and `cli.kit`) at module level;
the command API (`consort.app`), Rich and everything heavy are imported inside the commands, so
that `consort --version` and `--help` start fast.
"""

from __future__ import annotations

import importlib

import click

from consort import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="consort")
def cli() -> None:
    """Consort: agents write the code, a program decides every step, tests on real Postgres
    decide when it is done.

    Start with `consort init`, then `consort doctor` to see what runs where.
    """


# One line per module.
COMMAND_MODULES: tuple[str, ...] = (
    "consort.cli.setup",  # init, doctor
    "consort.cli.db",  # db start|stop|status|destroy|url|gc
    "consort.cli.branch",  # branch create|list|switch|delete|diff|gc
    "consort.cli.hook",  # hook post-checkout (hidden: git calls it)
    "consort.cli.orchestrate",  # intake, drive, next, status, approve, reject, retry, amend
    "consort.cli.verify",  # verify
    "consort.cli.suite",  # test
    "consort.cli.spike",  # spike NAME, spike end|list|gc
    "consort.cli.experiment",  # experiment (not built yet: says so)
    "consort.cli.log",  # log
    "consort.cli.report",  # report
    "consort.cli.schema",  # schema
    "consort.cli.guard",  # guard, update-agents
    "consort.cli.demo",  # demo
    "consort.cli.frontends",  # mcp, dashboard
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(cli)


def main() -> None:
    cli(prog_name="consort")
