"""A coding agent that uses `consort mcp` to reach beyond its own branch: the parent's database,
a root branch's, a sibling's, the superuser's; or to make a decision that is a person's.

The project: main -> feature/a -> story/a/s1 (checked out), and feature/b beside feature/a. The
agent may have the checked-out branch's login and those of branches made from it; nothing else,
under any spelling, and no answer of any tool (nor the server's log) holds another role's password.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from consort.adapters.db.cluster import SUPERUSER
from consort.adapters.db.secret import load_secret, password_for
from tests.helpers import consort, ok
from tests.integration.conftest import destroy_project_cluster
from tests.mcp_client import ToolAnswer, mcp_session

pytestmark = pytest.mark.integration

STORY = "story/a/s1"


@pytest.fixture(scope="module")
def lineage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("reach") / "shop"
    try:
        ok(consort("init", str(root), cwd=root.parent))
        ok(consort("branch", "create", "feature/a", cwd=root))
        ok(consort("branch", "create", "feature/b", cwd=root))
        ok(consort("branch", "create", STORY, "--from", "feature/a", cwd=root))
        ok(consort("branch", "switch", STORY, cwd=root))
        yield root
    finally:
        destroy_project_cluster(root)


def login(root: Path, branch: str) -> str:
    """The person's own `consort db url` for a branch (what the agent must never be given)."""
    return ok(consort("db", "url", branch, cwd=root)).strip()


def password(url: str) -> str:
    secret = urlsplit(url).password
    assert secret
    return secret


def forbidden_secrets(root: Path) -> dict[str, str]:
    """Every password the agent may not see from the story checkout."""
    secrets = {b: password(login(root, b)) for b in ("main", "feature/a", "feature/b")}
    secrets[SUPERUSER] = password_for(load_secret(root / ".consort" / "db"), SUPERUSER)
    return secrets


def refused(answer: ToolAnswer) -> str:
    assert answer.is_error, f"{answer.name} answered: {answer.text}"
    assert "postgresql://" not in answer.text
    return answer.text


def test_parent_root_sibling_and_superuser_urls_are_refused(lineage):
    asked = [
        "main",
        "feature/a",  # the story's parent
        "feature/b",  # beside the parent: not made from the story
        SUPERUSER,
        "postgres",
        "template1",
        " main",
        "main ",
        "refs/heads/main",
        "heads/main",
        "./main",
        "story/a/s1/../../../main",
        "MAIN",
        "feature/a^{}",
        "feature/a~0",
        "",
    ]
    session = mcp_session(lineage, [("database_url", {"branch": name}) for name in asked])
    texts = {name: refused(answer) for name, answer in zip(asked, session.answers, strict=True)}
    assert "root branch" in texts["main"]
    assert "parent of the checked-out branch" in texts["feature/a"]
    assert "not made from the checked-out branch" in texts["feature/b"]


def test_the_agent_gets_its_own_branch_and_a_branch_made_from_it_only(lineage):
    session = mcp_session(
        lineage,
        [
            ("database_url", {}),
            ("branch_create", {"name": "story/a/s1-try"}),  # from the checked-out story
            ("database_url", {"branch": "story/a/s1-try"}),
            ("branch_create", {"name": "from-main", "parent": "main"}),  # a fork of the root
            ("database_url", {"branch": "from-main"}),
        ],
    )
    own, made, child, fork, fork_url = session.answers
    assert own.json()["branch"] == STORY and own.json()["url"] == login(lineage, STORY)
    assert made.json()["name"] == "story/a/s1-try"
    assert child.json()["url"] == login(lineage, "story/a/s1-try")
    assert fork.json()["name"] == "from-main"  # making a branch is allowed...
    assert "not made from the checked-out branch" in refused(fork_url)  # ...reaching it is not


def test_the_own_login_opens_its_own_database_and_no_other(lineage):
    (own,) = mcp_session(lineage, [("database_url", {})]).answers
    url = own.json()["url"]
    with psycopg.connect(url) as conn:
        role, database = conn.execute("SELECT current_user, current_database()").fetchone()
        assert database == own.json()["database"]
        assert role != SUPERUSER
        superuser = "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
        assert conn.execute(superuser).fetchone() == (False,)
    parts = urlsplit(url)
    for other in ("main", "feature/a", "feature/b"):
        other_db = urlsplit(login(lineage, other)).path.lstrip("/")
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(parts._replace(path="/" + other_db).geturl(), connect_timeout=10)


def test_no_answer_and_no_log_line_holds_another_roles_password(lineage):
    calls = [
        ("status", {}),
        ("next", {}),
        ("log", {"limit": 1000}),
        ("verify", {}),
        ("branch_list", {}),
        ("branch_diff", {"name": STORY}),
        ("branch_diff", {"name": "main", "against": STORY}),
        ("database_url", {}),
        ("database_url", {"branch": "main"}),
        ("database_url", {"branch": "feature/a"}),
        ("schema", {"name": "feature-spec"}),
        ("cycle_evidence", {"cycle": "F1/S1/T1"}),
    ]
    session = mcp_session(lineage, calls)
    everything = "\n".join(a.text + json.dumps(a.data) for a in session.answers)
    own = password(session.answers[7].json()["url"])
    for who, secret in forbidden_secrets(lineage).items():
        assert secret not in everything, f"{who}'s password reached the agent"
        assert secret not in session.stderr, f"{who}'s password is in the server's log"
    assert own not in session.stderr  # the agent's own login is an answer, never a log line


def test_no_tool_decides_for_a_person(lineage):
    decisions = [
        ("approve", {"gate": "design", "subject": "F1"}),
        ("reject", {"gate": "design", "subject": "F1", "note": "x"}),
        ("retry", {"subject": "F1", "note": "x"}),
        ("amend", {"subject": "F1/S1/T1", "note": "x"}),
        ("experiment_select", {"subject": "F1/S1", "name": "a1"}),
        ("select", {"subject": "F1/S1", "name": "a1"}),
        ("experiment", {"subject": "F1/S1", "approaches": 2}),
    ]
    session = mcp_session(lineage, decisions)
    assert not set(session.tools) & {name for name, _ in decisions}
    for answer in session.answers:
        assert answer.is_error
    lines = (lineage / ".consort" / "ledger.jsonl").read_text().splitlines()
    decided = ('"gate.', '"amendment.', '"experiment.')
    assert not [line for line in lines if any(kind in line for kind in decided)]


def test_a_role_agent_inside_a_turn_gets_no_server(lineage):
    task = lineage / "task.json"
    result = consort("mcp", cwd=lineage, env={"CONSORT_TASK": str(task)}, input_text="")
    assert result.returncode == 2
    assert "not a role agent inside a turn" in result.stderr
    assert result.stdout == ""


def test_names_that_are_paths_read_no_file(lineage):
    climbs = (
        "../../../../etc/passwd",
        "/etc/passwd",
        "..",
        ".consort/db/secret",
        "../.consort/db/secret",
        "feature-spec/../../../../etc/passwd",
        "feature-spec\x00.json",
        "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    )
    cycles = (
        "../../../etc/passwd",
        "F1/S1/../../../../etc/passwd",
        "F1/../S1/T1",
        "/etc/passwd/x",
        ".consort/db/secret",
        "F1/S1/T1/../../..",
        "../../..",
        "F1/S1/T1\x00",
    )
    calls = [("schema", {"name": name}) for name in climbs]
    calls += [("cycle_evidence", {"cycle": name}) for name in cycles]
    calls += [("log", {"feature": name}) for name in ("../../etc/passwd", ".consort/db")]
    session = mcp_session(lineage, calls)
    superuser = forbidden_secrets(lineage)[SUPERUSER]
    secret_file = (lineage / ".consort" / "db" / "secret").read_text().strip()
    for (name, arguments), answer in zip(calls, session.answers, strict=True):
        if name != "log":
            assert answer.is_error, (name, arguments, answer.text)
        shown = answer.text + json.dumps(answer.data)
        assert "root:x:0:0" not in shown, (name, arguments)
        assert superuser not in shown and secret_file not in shown, (name, arguments)


def test_a_branch_named_like_sql_makes_one_plain_database(lineage):
    hostile = "x';DROP-DATABASE-main;--"
    try:
        created, rows = mcp_session(
            lineage, [("branch_create", {"name": hostile}), ("branch_list", {})]
        ).answers
        database = created.json()["database"]
        assert database.replace("_", "").isalnum() and database.islower(), database
        listed = {row["name"]: row for row in rows.json()["branches"]}
        assert listed[hostile]["database"] == database
        assert listed["main"]["database"]  # main and its database are still there
        with psycopg.connect(login(lineage, "main")) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        consort("branch", "delete", hostile, "--force", cwd=lineage)
