"""`consort mcp` as a coding agent meets it: the SDK's stdio client talking to the real command,
started as a child process in a real project on the embedded PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from consort.mcp.server import TOOL_NAMES
from tests.helpers import consort, git, ok
from tests.integration.conftest import destroy_project_cluster
from tests.mcp_client import mcp_session

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("mcp") / "shop"
    try:
        ok(consort("init", str(root), cwd=root.parent))
        yield root
    finally:
        destroy_project_cluster(root)


def cli_json(root: Path, *args: str) -> object:
    return json.loads(ok(consort(*args, "--json", cwd=root)))


def test_init_registers_the_server_for_claude_code(shop):
    config = json.loads((shop / ".mcp.json").read_text())
    assert config["mcpServers"]["consort"] == {
        "type": "stdio",
        "command": "consort",
        "args": ["mcp"],
    }
    assert ".mcp.json" in git(shop, "ls-files").splitlines()  # committed with the set-up


def test_the_tools_a_coding_agent_sees(shop):
    session = mcp_session(shop, [])
    assert session.tools == list(TOOL_NAMES)
    decisions = ("approve", "reject", "retry", "amend")
    assert not [tool for tool in session.tools if any(word in tool for word in decisions)]


def test_read_only_tools_answer_what_the_cli_answers(shop):
    calls = [
        ("status", {}),
        ("next", {}),
        ("log", {}),
        ("verify", {}),
        ("branch_list", {}),
        ("schema", {"name": "test-list"}),
    ]
    status, nxt, log, verify, branches, schema = mcp_session(shop, calls).answers
    status_json = status.json()
    expected_status = cli_json(shop, "status")
    # sizes move as the server writes its catalogue; everything else is the same answer
    for rows in (status_json["branches"], expected_status["branches"]):
        for row in rows:
            row.pop("size_bytes")
    assert status_json == expected_status
    assert nxt.json() == cli_json(shop, "next")
    assert nxt.json()["kind"] == "intake-needed"
    assert log.json()["events"] == cli_json(shop, "log")
    assert log.json()["ok"] is True and log.json()["total"] == 1
    assert verify.json() == cli_json(shop, "verify")
    assert [row["name"] for row in branches.json()["branches"]] == ["main"]
    assert schema.json() == json.loads(ok(consort("schema", "test-list", cwd=shop)))


def test_log_filters_like_the_cli(shop):
    (answer,) = mcp_session(shop, [("log", {"event_type": "project", "limit": 5})]).answers
    assert [e["type"] for e in answer.json()["events"]] == ["project.initialised"]
    (none,) = mcp_session(shop, [("log", {"event_type": "gate"})]).answers
    assert none.json()["events"] == []


def test_a_branch_made_through_mcp_gives_its_own_login_and_its_schema_diff(shop):
    session = mcp_session(
        shop,
        [
            ("branch_create", {"name": "agent/work"}),
            ("database_url", {"branch": "agent/work"}),
        ],
    )
    created, login = session.answers
    assert created.json()["name"] == "agent/work"
    rows = {row["name"]: row for row in cli_json(shop, "branch", "list")}
    assert rows["agent/work"]["parent"] == "main" and rows["agent/work"]["pairing"] == "paired"
    url = login.json()["url"]
    assert url == ok(consort("db", "url", "agent/work", cwd=shop)).strip()
    with psycopg.connect(url) as conn:
        role, database = conn.execute("SELECT current_user, current_database()").fetchone()
        assert database == created.json()["database"] == login.json()["database"]
        assert role != "main_user"
        conn.execute("CREATE TABLE bins (code text PRIMARY KEY)")
    (diff,) = mcp_session(shop, [("branch_diff", {"name": "agent/work"})]).answers
    expected = json.loads(ok(consort("branch", "diff", "agent/work", "--json", cwd=shop)))
    assert diff.json() == expected
    assert diff.json()["base"] == "main" and "bins" in json.dumps(diff.json())


def test_the_checked_out_branch_is_the_default(shop):
    ok(consort("branch", "create", "agent/checked-out", cwd=shop))
    ok(consort("branch", "switch", "agent/checked-out", cwd=shop))
    try:
        (login,) = mcp_session(shop, [("database_url", {})]).answers
        assert login.json()["branch"] == "agent/checked-out"
        assert login.json()["url"] == ok(consort("db", "url", cwd=shop)).strip()
    finally:
        ok(consort("branch", "switch", "main", cwd=shop))


def test_consort_errors_come_back_as_tool_errors_with_the_fix(shop):
    session = mcp_session(
        shop,
        [
            ("cycle_evidence", {"cycle": "F1/S1/T1"}),
            ("cycle_evidence", {"cycle": "not-a-cycle"}),
            ("schema", {"name": "no-such-artifact"}),
            ("branch_create", {"name": "agent/work"}),  # exists already
            ("next", {"feature": "F9"}),
        ],
    )
    for answer in session.answers:
        assert answer.is_error, answer
    missing, malformed, schema, exists, feature = session.answers
    assert "no feature 'F1'" in missing.text and "fix:" in missing.text
    assert "F/S/T" in malformed.text
    assert "feature-spec" in schema.text  # the valid names
    assert "already exists" in exists.text
    assert "no feature 'F9'" in feature.text


def test_outside_a_project_it_refuses_to_start(tmp_path):
    result = consort("mcp", cwd=tmp_path)
    assert result.returncode == 2
    assert "no Consort project" in result.stderr
