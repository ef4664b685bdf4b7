"""`consort mcp` on the finished demo: each read-only tool's answer, through the SDK's own stdio
client, against what the CLI says about the same project."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import DEMO_TIMEOUT_S
from tests.helpers import consort, ok
from tests.mcp_client import mcp_session

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2 * DEMO_TIMEOUT_S)]


def test_each_tool_on_the_finished_demo(demo):
    root, _ = demo
    calls = [
        ("status", {}),
        ("next", {}),
        ("log", {"event_type": "gate"}),
        ("verify", {}),
        ("branch_list", {}),
        ("schema", {"name": "cycle-plan"}),
        ("cycle_evidence", {"cycle": "F1/S1/T2"}),
        ("cycle_evidence", {"cycle": "F1-stock-visibility/S2-stock-by-location/T6"}),
        ("database_url", {}),  # main is checked out: a root branch's login is never given
    ]
    status, nxt, gates, verify, branches, schema, t2, t6, url = mcp_session(root, calls).answers
    assert [f["lane"] for f in status.json()["features"]] == ["done"]
    assert nxt.json()["kind"] == "done"
    decided = [(e["data"]["gate"], e["actor"]) for e in gates.json()["events"]]
    assert decided == [
        ("design", "proxy"),
        ("story", "proxy"),
        ("story", "proxy"),
        ("story", "proxy"),
        ("deploy", "proxy"),
        ("promote", "proxy"),
    ]
    assert verify.json() == json.loads(consort("verify", "--json", cwd=root).stdout)
    assert verify.json()["ok"] is True
    assert [row["name"] for row in branches.json()["branches"]] == ["main"]
    assert schema.json() == json.loads(ok(consort("schema", "cycle-plan", cwd=root)))

    evidence = t2.json()
    assert (evidence["story"], evidence["item"], evidence["stage"]) == (
        "S1-file-stock",
        "T2",
        "done",
    )
    assert set(evidence["stages"]) >= {"red", "green", "green.failed-1"}  # the recorded repair
    green = evidence["stages"]["green"]
    assert green["commit"] == evidence["commits"]["green"]
    assert green["run"]["counts"]["failed"] == 0 and green["run"]["counts"]["passed"] > 0
    assert green["run"]["parent_database"].startswith("story_f1_stock_visibility_s1")
    types = [e["type"] for e in evidence["events"]]
    assert types.index("red.verified") < types.index("green.failed") < types.index("green.verified")
    assert "refactor" in t6.json()["stages"]  # the refactor the review asked for
    assert url.is_error and "root branch" in url.text


def test_a_branch_of_the_demo_made_reached_and_diffed_through_mcp(demo):
    import psycopg

    root, _ = demo
    branch = "try/mcp-probe"
    try:
        created, own_url = mcp_session(
            root, [("branch_create", {"name": branch}), ("database_url", {"branch": branch})]
        ).answers
        assert created.json()["name"] == branch
        login = own_url.json()
        assert login["branch"] == branch and login["database"] == created.json()["database"]
        with psycopg.connect(login["url"], autocommit=True) as conn:
            # the branch's copy of the finished demo: its tables, and the person's rows in them
            tables = {
                row[0]
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                ).fetchall()
            }
            assert {"skus", "locations", "stock_records"} <= tables
            conn.execute("CREATE TABLE probe (id integer PRIMARY KEY)")
        diff, rows = mcp_session(
            root, [("branch_diff", {"name": branch}), ("branch_list", {})]
        ).answers
        assert diff.json()["base"] == "main" and diff.json()["branch"] == branch
        assert diff.json()["changes"] == [
            {"kind": "table_added", "table": "public.probe", "detail": ""}
        ]
        listed = {row["name"]: row for row in rows.json()["branches"]}
        assert listed[branch]["parent"] == "main"
    finally:
        consort("branch", "delete", branch, "--force", cwd=root)  # the demo is shared: undo
    assert branch not in ok(consort("branch", "list", cwd=root))
