"""`consort demo` end to end: StockFlow from the product owner's words to a promoted main."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.e2e.conftest import DEMO_TIMEOUT_S
from tests.helpers import consort, git, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2 * DEMO_TIMEOUT_S)]


def _events(root: Path) -> list[dict]:
    lines = (root / ".consort" / "ledger.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_demo_completes_and_verifies(demo):
    root, output = demo
    assert "DEMO MODE" in output and "HUMAN PROXY" in output
    assert "built and promoted" in output
    assert "PostgreSQL server is still running" in output and "db stop" in output
    ok(consort("verify", cwd=root))
    kinds = [e["type"] for e in _events(root)]
    assert "feature.promoted" in kinds
    assert kinds.count("story.merged") == 3
    assert kinds.count("red.verified") >= 9
    assert "green.failed" in kinds  # the recorded repair
    assert "refactor.verified" in kinds  # the refactor the review asked for
    approvals = [e for e in _events(root) if e["type"] == "gate.approved"]
    assert approvals and all(e["actor"] == "proxy" for e in approvals)


def test_verify_on_a_fresh_clone_re_proves_everything(demo, tmp_path):
    root, _ = demo
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    assert not (clone / ".consort" / "db").exists()  # no secret, no cluster travels
    assert not list((clone / ".consort").glob("runs/*/*.out"))  # logs stay out
    out = ok(consort("verify", cwd=clone))
    for held in ("hash chain intact", "accepted artifacts", "GREEN/REFACTOR", "merge commits"):
        assert held in out, out
    # the clone's evidence is the same ledger as the project's, up to the promote
    promoted = next(e for e in _events(root) if e["type"] == "feature.promoted")
    assert any(e["seq"] == promoted["seq"] for e in _events(clone))
    sealed = [
        e["data"]["run"]
        for e in _events(clone)
        if e["type"] in ("green.verified", "refactor.verified") and e["data"].get("run")
    ]
    assert sealed and all(r["sealed"] and r["canaries"]["holds"] for r in sealed)
    assert all(r["sessions"] > 0 for r in sealed)  # every suite used its throwaway database


def test_the_apps_suite_passes_against_the_promoted_main_database(demo):
    root, _ = demo
    url = ok(consort("db", "url", "main", cwd=root)).strip()
    with psycopg.connect(url) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        }
    assert {"alembic_version"} < tables and len(tables) >= 3
    # run the suite on a copy, as the app's own tests write rows
    ok(consort("branch", "create", "check-suite", cwd=root))
    try:
        check_url = ok(consort("db", "url", "check-suite", cwd=root)).strip()
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=root,
            env={
                "PATH": "/usr/bin:/bin",
                "DATABASE_URL": check_url,
                "PYTHONDONTWRITEBYTECODE": "1",
            },
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert " passed" in result.stdout
    finally:
        ok(consort("branch", "delete", "check-suite", "--force", cwd=root))


def test_every_test_file_at_head_is_identical_to_its_red_commit(demo):
    root, _ = demo
    for event in _events(root):
        if event["type"] != "red.verified":
            continue
        red = event["data"]["commit"]
        for test_file in event["data"]["plan"]["test_files"]:
            at_red = git(root, "rev-parse", f"{red}:{test_file}")
            at_head = git(root, "rev-parse", f"HEAD:{test_file}")
            if at_red != at_head:
                # a later cycle may extend the same file; then it must match that cycle's RED
                later = [
                    e["data"]["commit"]
                    for e in _events(root)
                    if e["type"] == "red.verified" and test_file in e["data"]["plan"]["test_files"]
                ]
                assert git(root, "rev-parse", f"{later[-1]}:{test_file}") == at_head, test_file


def test_no_database_branch_is_left_but_main(demo):
    root, _ = demo
    rows = json.loads(ok(consort("branch", "list", "--json", cwd=root)))
    assert [r["name"] for r in rows if r["database"]] == ["main"]
    url = ok(consort("db", "url", "main", cwd=root)).strip()
    assert url.endswith("/main")


def _clean(root: Path) -> str:
    """What `git status` shows, untracked files listed one by one ("" when clean)."""
    return git(root, "status", "--porcelain", "--untracked-files=all")


def test_git_status_is_clean_when_the_demo_ends(demo):
    """Whatever Consort wrote in .consort/ is committed with the evidence or ignored: after the
    drive that promoted, nothing is modified or untracked; the reports are in git, logs are not."""
    root, _ = demo
    assert _clean(root) == ""
    committed = git(root, "ls-files", ".consort").splitlines()
    assert ".consort/ledger.jsonl" in committed
    assert ".consort/claude-manifest.json" in committed
    reports = [p for p in committed if p.startswith(".consort/runs/")]
    assert reports and all(p.endswith("/junit.xml") for p in reports)
    turns = [p for p in committed if p.startswith(".consort/turns/")]
    assert turns and all("/outputs/" in p for p in turns)
    assert git(root, "show", "HEAD:.consort/ledger.jsonl") == (
        (root / ".consort" / "ledger.jsonl").read_text().rstrip("\n")
    )  # the committed ledger ends with the drive's own last record


@pytest.mark.costly  # a whole demo of its own
def test_setup_only_then_drive_in_steps_reaches_the_same_end(tmp_path):
    root = tmp_path / "steps"
    try:
        out = ok(consort("demo", str(root), "--setup-only", cwd=tmp_path))
        assert "set up" in out
        assert not any(e["type"] == "turn.started" for e in _events(root))
        steps = 0
        ended_clean = False
        while True:
            result = consort("drive", "--max-steps", "10", cwd=root, timeout=600)
            assert result.returncode == 0, result.stdout + result.stderr
            if "evidence committed" in result.stdout:
                assert _clean(root) == "", result.stdout  # the drive that promoted ends clean
                ended_clean = True
            steps += 1
            if "every feature is done" in result.stdout:
                break
            assert steps < 30, "the demo does not finish in steps"
        ok(consort("verify", cwd=root))
        assert any(e["type"] == "feature.promoted" for e in _events(root))
        assert ended_clean
    finally:
        destroy_project_cluster(root)
