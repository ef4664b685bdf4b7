"""`.mcp.json`: Claude Code's project-scoped list of MCP servers, where `consort init` registers
`consort mcp`. A file of the user's is never rewritten: an existing `.mcp.json` without Consort
in it gets a warning with the entry to add."""

from __future__ import annotations

import json
from typing import Any

from consort.core.fsutil import atomic_write_text
from consort.core.project import Project

MCP_CONFIG_FILE = ".mcp.json"
SERVER_KEY = "consort"
SERVER_ENTRY: dict[str, Any] = {"type": "stdio", "command": "consort", "args": ["mcp"]}


def config_text() -> str:
    return json.dumps({"mcpServers": {SERVER_KEY: SERVER_ENTRY}}, indent=2) + "\n"


def register_for_claude(project: Project) -> tuple[list[str], list[str]]:
    """Write `.mcp.json` naming `consort mcp` unless one exists; what was done, what to warn."""
    path = project.root / MCP_CONFIG_FILE
    if not path.exists():
        atomic_write_text(path, config_text())
        return [f"registered `consort mcp` for Claude Code in {MCP_CONFIG_FILE}"], []
    try:
        servers = json.loads(path.read_text(encoding="utf-8")).get("mcpServers", {})
    except (OSError, ValueError, AttributeError):
        servers = None
    if isinstance(servers, dict) and SERVER_KEY in servers:
        return [], []
    entry = json.dumps({SERVER_KEY: SERVER_ENTRY})
    return [], [f"your {MCP_CONFIG_FILE} was left alone: add {entry} to its mcpServers"]
