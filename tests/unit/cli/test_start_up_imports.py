"""Every command module is imported when Consort starts (`consort.cli.main` registers them all),
so what they import at module level is paid by every command, `consort --version` included: only
click and the command API's errors, never the command API itself, the adapters or the heavy
libraries (each command imports what it needs inside itself)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pydantic", "psycopg", "rich", "starlette", "mcp", "uvicorn")
ALLOWED_CONSORT = {
    "consort",
    "consort.app",
    "consort.app.errors",
    "consort.core",
    "consort.core.errors",
}


def test_the_cli_starts_without_the_command_api_adapters_or_heavy_libraries() -> None:
    probe = "import sys, json, consort.cli.main; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
    )
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY]
    ours = [
        m
        for m in loaded
        if m.split(".")[0] == "consort"
        and not m.startswith("consort.cli")
        and m not in ALLOWED_CONSORT
    ]
    assert heavy == [] and ours == [], (heavy, ours)
