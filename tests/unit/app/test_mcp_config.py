"""`.mcp.json` registration and the branch lineage `consort mcp` reasons with."""

from __future__ import annotations

import json
from pathlib import Path

from consort.app.mcp_config import MCP_CONFIG_FILE, register_for_claude
from consort.app.reach import lineage
from consort.core.project import Project


def test_a_missing_mcp_json_is_written_naming_consort_mcp(tmp_path: Path):
    done, warnings = register_for_claude(Project(tmp_path))
    config = json.loads((tmp_path / MCP_CONFIG_FILE).read_text())
    assert config["mcpServers"]["consort"]["command"] == "consort"
    assert config["mcpServers"]["consort"]["args"] == ["mcp"]
    assert done and not warnings
    assert register_for_claude(Project(tmp_path)) == ([], [])  # re-running changes nothing


def test_the_users_own_mcp_json_is_never_rewritten(tmp_path: Path):
    theirs = '{"mcpServers": {"docs": {"command": "docs-server"}}}\n'
    (tmp_path / MCP_CONFIG_FILE).write_text(theirs)
    done, warnings = register_for_claude(Project(tmp_path))
    assert (tmp_path / MCP_CONFIG_FILE).read_text() == theirs
    assert not done and "left alone" in warnings[0] and '"consort"' in warnings[0]


def test_an_unreadable_mcp_json_is_left_alone_too(tmp_path: Path):
    (tmp_path / MCP_CONFIG_FILE).write_text("not json")
    _, warnings = register_for_claude(Project(tmp_path))
    assert (tmp_path / MCP_CONFIG_FILE).read_text() == "not json" and warnings


def test_lineage_walks_to_the_root_and_survives_a_cycle():
    parents = {"main": None, "f": "main", "s": "f", "x": "y", "y": "x"}
    assert lineage(parents, "s") == ["s", "f", "main"]
    assert lineage(parents, "main") == ["main"]
    assert lineage(parents, "x") == ["x", "y"]
    assert lineage(parents, "unknown") == ["unknown"]
