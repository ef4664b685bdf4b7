"""A command's module is imported when Consort starts that command, and every command module
for `--help`: so what they import at module level is paid by every command: only click and the
command API's errors, never the command API itself, the adapters or the heavy libraries (each
command imports what it needs inside itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from consort.cli.plain import TERMINAL_SWITCHES

HEAVY = ("pydantic", "psycopg", "rich", "starlette", "mcp", "uvicorn")
# The standard library's modules that only some commands need: writing files (tempfile, which
# loads random; shutil, which loads the compressors) and reading times in other shapes.
ON_SOME_PATHS = ("tempfile", "random", "shutil", "bz2", "lzma", "_strptime")
ALLOWED_CONSORT = {
    "consort",
    "consort.app",
    "consort.app.errors",
    "consort.core",
    "consort.core.errors",
}


def test_the_cli_starts_without_the_command_api_adapters_or_heavy_libraries() -> None:
    probe = (
        "import importlib, sys, json; from consort.cli.main import COMMAND_MODULES; "
        "[importlib.import_module(m) for m in COMMAND_MODULES]; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
    )
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY or m in ON_SOME_PATHS]
    ours = [
        m
        for m in loaded
        if m.split(".")[0] == "consort"
        and not m.startswith("consort.cli")
        and m not in ALLOWED_CONSORT
    ]
    assert heavy == [] and ours == [], (heavy, ours)


# What `consort status`, `next` and `log` print, rendered as those commands render it, into a
# pipe: where output is not a terminal, `cli.plain` writes it and Rich stays unloaded.
RENDER_INTO_A_PIPE = """
import json, sys
from datetime import UTC, datetime
from consort.app.log import LogEntry
from consort.app.status import FeatureLine, StatusReport, StoryLine
from consort.cli import log, ui
from consort.cli.status_view import render_status

render_status(StatusReport(
    features=[FeatureLine("F1-x", "X", "build", "approved", "run-turn", {"ux": "accepted"})],
    stories=[StoryLine("F1-x", "S1-y", "story/F1-x/S1-y", 1, 3, "T2 green", "open")],
    branches=[{"current": True, "name": "main", "database": "main", "parent": None,
               "size_bytes": 7864320}],
    sandbox_warning="2 turns ran with sandbox = \\"off\\"",
))
ui.say("[bold]run the driver's green turn[/bold]  (build lane)")
ui.say("why: T2 of S1-y is red")
time = datetime(2026, 12, 1, 10, 30, 40, tzinfo=UTC)
log._print_table([LogEntry(7, time, "orchestrator", "turn.finished", "F1-x/S1-y/T2",
                           {"note": "x" * 200, "step": "green"}, {})])
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def test_status_next_and_log_render_into_a_pipe_without_rich() -> None:
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_SWITCHES}
    done = subprocess.run(
        [sys.executable, "-c", RENDER_INTO_A_PIPE],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    loaded = json.loads(done.stderr.splitlines()[-1])
    assert "Features" in done.stdout and "12-01 10:30:40" in done.stdout  # it did render
    assert [m for m in loaded if m.split(".")[0] == "rich"] == []


def test_each_command_module_registers_the_commands_main_expects_of_it() -> None:
    import importlib

    import click

    from consort.cli.main import COMMAND_MODULES

    for module, names in COMMAND_MODULES.items():
        group = click.Group()
        importlib.import_module(module).register(group)
        assert tuple(group.commands) == names, module


def test_a_command_imports_its_own_module_alone() -> None:
    probe = (
        "import sys, json, click; from consort.cli.main import cli; "
        "cli.get_command(click.Context(cli), 'status'); "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('consort.cli.'))))"
    )
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
    )
    assert loaded == ["consort.cli.kit", "consort.cli.main", "consort.cli.orchestrate"]
