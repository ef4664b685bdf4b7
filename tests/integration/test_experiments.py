"""Experiments end to end on StockFlow: three approaches to S1's first cycle, raced in parallel
on their own paired branches (real git worktrees, real PostgreSQL copies, real sealed pytest
runs, command agents in the real sandbox): one honest, one that needs a repair, one that never
passes. The comparison, the selection, `verify`, and the databases left afterwards."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers import consort, git, ok
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

AGENT = Path(__file__).parents[1] / "agents" / "approach_agent.py"
PLAYBOOK = Path(__file__).parents[2] / "src" / "consort" / "examples" / "stockflow" / "playbook"
SUBJECT = "F1-stock-visibility/S1-file-stock/T1"


def approach(name: str, mode: str, **extra: object) -> str:
    command = json.dumps([sys.executable, str(AGENT), str(PLAYBOOK), mode])
    lines = [f"[experiment.approaches.{name}]", 'adapter = "command"', f"command = {command}"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def stockflow(root: Path, approaches: str, *, concurrency: int = 3) -> Path:
    """StockFlow scaffolded by the demo (replayed design, RED and later turns, proxy gates),
    with the experiment's approaches configured, its design driven to the gate and past it."""
    ok(consort("demo", str(root), "--setup-only", cwd=root.parent))
    config = root / "consort.toml"
    config.write_text(
        config.read_text()
        + f"\n[experiment]\nconcurrency = {concurrency}\nmax_cycles = 2\n"
        + approaches
    )
    git(root, "add", "consort.toml")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "experiments")
    ok(consort("drive", "--until", "design", cwd=root))
    return root


def ledger(root: Path) -> list[dict]:
    lines = (root / ".consort" / "ledger.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def when(event: dict) -> datetime:
    return datetime.fromisoformat(event["time"].replace("Z", "+00:00"))


def databases(root: Path) -> set[str]:
    listing = json.loads(ok(consort("branch", "list", "--json", cwd=root)))
    return {row["name"] for row in listing if row.get("database")}


def catalog_leftovers(root: Path) -> tuple[set[str], set[str]]:
    """Databases, and branch roles, the server holds beyond the paired branches' own: the
    throwaway children of runs and turns included, which `branch list` does not show."""
    import psycopg

    listing = json.loads(ok(consort("branch", "list", "--json", cwd=root)))
    paired = {row["database"] for row in listing if row.get("database")}
    url = ok(consort("db", "url", "main", cwd=root)).strip()
    with psycopg.connect(url) as conn:
        names = {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}
        roles = {r[0] for r in conn.execute("SELECT rolname FROM pg_roles").fetchall()}
    extra = names - paired - {"postgres", "template0", "template1"}
    orphan_roles = {r for r in roles if r.endswith("_user") and r[: -len("_user")] not in paired}
    return extra, orphan_roles


@pytest.fixture(scope="module")
def raced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    root = tmp_path_factory.mktemp("experiment") / "stockflow"
    try:
        stockflow(
            root,
            approach("honest", "honest", notes="Follow the architecture to the letter.")
            + approach("repairs", "repairs")
            + approach("never", "never")
            # Capped by its wall time: its turn is stopped, and it says so.
            + approach("slow", "slow", wall_time=5),
        )
        result = consort(
            "experiment", "F1/S1", "--approaches", "4", "--json", cwd=root, timeout=900
        )
        assert result.returncode == 0, result.stdout + result.stderr
        yield root, json.loads(result.stdout)
    finally:
        destroy_project_cluster(root)


def test_each_approach_ran_on_its_own_paired_branch_from_the_red_commit(raced):
    root, _ = raced
    started = next(e for e in ledger(root) if e["type"] == "experiment.started")
    assert started["subject"] == SUBJECT and started["actor"] == "human"
    assert started["data"]["concurrency"] == 3
    red = next(e for e in ledger(root) if e["type"] == "red.verified")["data"]["commit"]
    assert started["data"]["red_commit"] == red
    branches = {a["name"]: a["branch"] for a in started["data"]["approaches"]}
    assert branches == {
        name: f"experiment/{SUBJECT}-1/{name}" for name in ("honest", "repairs", "never", "slow")
    }
    assert len({a["database"] for a in started["data"]["approaches"]}) == 4
    # Every attempt was a sandboxed driver turn of the cycle, judged by a sealed run.
    turns = {
        e["data"]["turn"]: e["data"]["sandbox"]
        for e in ledger(root)
        if e["type"] == "turn.started" and e["data"]["role"] == "driver"
    }
    attempts = [e["data"] for e in ledger(root) if e["type"] == "experiment.attempted"]
    assert {a["turn"] for a in attempts} <= set(turns)
    assert {turns[a["turn"]] for a in attempts} == {"bwrap"}
    assert all(a["run"]["sealed"] for a in attempts if a["run"])
    # The honest approach's notes reached its driver, and no one else's.
    tasks = {
        a["approach"]: json.loads(
            (root / ".consort" / "turns" / a["turn"] / "task.json").read_text()
        )
        for a in attempts
    }
    assert "Follow the architecture to the letter." in tasks["honest"]["instructions"]
    assert "Follow the architecture" not in tasks["repairs"]["instructions"]


def test_the_comparison_is_right(raced):
    _, compared = raced
    rows = {r["name"]: r for r in compared["approaches"]}
    assert rows["honest"]["outcome"] == "passed" and rows["honest"]["cycles"] == 1
    assert rows["repairs"]["outcome"] == "passed" and rows["repairs"]["cycles"] == 2
    assert rows["repairs"]["repairs"] == 1
    assert rows["never"]["outcome"] == "cycles-spent" and rows["never"]["cycles"] == 2
    assert "capped" in rows["never"]["message"]
    for name in ("honest", "repairs"):
        row = rows[name]
        assert row["tests_passed"] == row["tests_total"] > 0
        assert row["lines_added"] > 0
        assert any("skus" in change for change in row["schema_changes"]), row["schema_changes"]
        # Against the schema at the RED commit (its migrations run), not the story's database:
        # the migration tool's own table was there at RED, so it is no change of the approach.
        assert not any("alembic_version" in c for c in row["schema_changes"]), row
    assert rows["never"]["tests_passed"] < rows["never"]["tests_total"]
    assert rows["slow"]["outcome"] == "wall-time", rows["slow"]
    assert "wall time" in rows["slow"]["message"] and rows["slow"]["cycles"] == 1
    assert all(r["violations"] == 0 for r in rows.values())
    assert compared["recommendation"]["kind"] == "winner"
    assert compared["recommendation"]["winner"] == "honest"
    assert compared["condition"] == "waiting"
    # The drive waits for a person while the experiment is open.
    status = consort("drive", cwd=raced[0])
    assert status.returncode == 0 and "experiment" in status.stdout + status.stderr
    # ... and leaves the approaches' checkouts alone (they are no crash's leftovers).
    checkouts = raced[0] / ".consort" / "worktrees" / "_experiments" / f"{SUBJECT}-1"
    assert all((checkouts / name / ".git").exists() for name in rows)


def test_a_failed_approach_cannot_be_selected(raced):
    root, _ = raced
    refused = consort("experiment", "select", "F1/S1", "never", cwd=root)
    assert refused.returncode == 2
    assert "did not pass" in refused.stdout + refused.stderr


def test_status_shows_the_approaches_side_by_side_with_the_command_that_selects(raced):
    root, compared = raced
    report = json.loads(ok(consort("status", "--json", cwd=root)))
    (shown,) = report["experiments"]
    # What `compare` showed, without what only the race's run knows (its steps and its time).
    assert shown == {k: v for k, v in compared.items() if k not in ("prepared", "seconds")}
    assert shown["story"] == "F1/S1" and shown["condition"] == "waiting"
    assert shown["commands"][0] == "consort experiment select F1/S1 honest"
    text = ok(consort("status", cwd=root))
    assert f"experiment 1 on {SUBJECT} (waiting" in text
    for name in ("honest", "repairs", "never", "slow"):
        assert name in text
    assert "consort experiment select F1/S1 honest" in text
    story = next(s for s in report["stories"] if s["story"] == "S1-file-stock")
    assert story["current"] == "T1 green, experiment 1 waiting for a person"
    # `next` names the stop that waits for a person, and what resolves it.
    waiting = consort("next", cwd=root)
    assert waiting.returncode == 0
    assert "consort experiment select F1/S1" in waiting.stdout


@pytest.mark.timeout(900)  # the fixture's race (when this test runs alone), then two steps
def test_selecting_the_honest_one_merges_it_and_verify_passes(raced):
    root, _ = raced
    before = databases(root)
    names = ("honest", "repairs", "never", "slow")
    assert {f"experiment/{SUBJECT}-1/{n}" for n in names} <= before
    chosen = consort("experiment", "select", "F1/S1", "honest", "--json", cwd=root)
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr
    selected = json.loads(chosen.stdout)
    passing = next(
        e["data"]
        for e in ledger(root)
        if e["type"] == "experiment.attempted" and e["data"]["approach"] == "honest"
    )
    assert selected["commit"] == passing["commit"]
    story_head = git(root, "rev-parse", "refs/heads/story/F1-stock-visibility/S1-file-stock")
    assert story_head == passing["commit"]
    green = [e for e in ledger(root) if e["type"] == "green.verified"]
    assert len(green) == 1 and green[0]["data"]["commit"] == passing["commit"]
    assert green[0]["subject"] == SUBJECT
    assert sorted(selected["archived"]) == [
        f"archive/experiment/{SUBJECT}-1/never",
        f"archive/experiment/{SUBJECT}-1/repairs",
        f"archive/experiment/{SUBJECT}-1/slow",
    ]
    assert len(selected["dropped"]) == 4
    after = databases(root)
    assert not any(name.startswith("experiment/") for name in after)
    branches = git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
    assert not any(b.startswith("experiment/") for b in branches)
    assert f"archive/experiment/{SUBJECT}-1/never" in branches
    worktrees = root / ".consort" / "worktrees" / "_experiments"
    assert not any(p.is_dir() and (p / ".git").exists() for p in worktrees.rglob("*"))
    verified = consort("verify", "--json", cwd=root)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    report = json.loads(verified.stdout)
    assert any("experiment" in line for line in report["holds"]), report["holds"]
    # The build goes on from the selected GREEN as if it had been the only one: its review,
    # then the next cycle's RED, from the selected commit.
    going = consort("drive", "--max-steps", "2", cwd=root, timeout=900)
    assert going.returncode == 0, going.stdout + going.stderr
    later = ledger(root)
    review = next(e for e in later if e["type"] == "review.recorded")
    assert review["subject"] == SUBJECT
    red_t2 = next(e for e in later if e["type"] == "red.verified" and e["subject"].endswith("/T2"))
    parent = git(root, "rev-parse", red_t2["data"]["commit"] + "^")
    assert parent == passing["commit"]
    assert consort("verify", cwd=root).returncode == 0
    assert not any(n.startswith(("experiment/", "archive/")) for n in databases(root))
    # The archived branches are kept until gc; then they go, and verify still holds.
    collected = ok(consort("branch", "gc", cwd=root))
    assert f"archive/experiment/{SUBJECT}-1/never" in collected
    branches = git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
    assert not any(b.startswith("archive/") for b in branches)
    assert consort("verify", cwd=root).returncode == 0
    # Nothing the race, its runs or its turns made is left on the server.
    assert catalog_leftovers(root) == (set(), set())


@pytest.mark.timeout(900)
def test_a_race_killed_half_way_is_resumed_by_the_same_command(tmp_path: Path):
    """kill -9 while one approach's turn runs: the ledger holds, verify passes, and the same
    command goes on with the approach that had not ended; the one that had keeps its result."""
    import os
    import signal
    import subprocess
    import time

    root = tmp_path / "stockflow"
    try:
        stockflow(root, approach("honest", "honest") + approach("late", "slow"))
        env = dict(os.environ, COLUMNS="200")
        env.pop("CONSORT_TASK", None)
        racing = subprocess.Popen(
            [sys.executable, "-m", "consort", "experiment", "F1/S1", "--approaches", "2"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            for _ in range(600):  # until the honest approach has ended, the other still works
                kinds = [(e["type"], e["data"].get("approach")) for e in ledger(root)]
                if ("experiment.approach-ended", "honest") in kinds:
                    break
                assert racing.poll() is None, "the race ended before it was killed"
                time.sleep(0.5)
            else:
                pytest.fail("the honest approach never ended")
        finally:
            os.killpg(racing.pid, signal.SIGKILL)
            racing.wait()
        assert ("experiment.approach-ended", "late") not in [
            (e["type"], e["data"].get("approach")) for e in ledger(root)
        ]
        assert consort("verify", cwd=root).returncode == 0
        # What the killed run spent of the late approach's wall time: from its attempt's start
        # to the last event the run recorded.
        killed = ledger(root)
        began = [e for e in killed if e["type"] == "experiment.attempt-began"]
        first = next(e for e in began if e["data"]["approach"] == "late")
        spent = (when(killed[-1]) - when(first)).total_seconds()
        # The late approach is given an honest driver; the same command resumes the race.
        config = root / "consort.toml"
        config.write_text(config.read_text().replace('"slow"]', '"honest"]'))
        resumed = consort("experiment", "F1/S1", "--json", cwd=root, timeout=600)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        compared = json.loads(resumed.stdout)
        assert compared["experiment"] == 1 and compared["condition"] == "waiting"
        rows = {r["name"]: r for r in compared["approaches"]}
        assert rows["honest"]["outcome"] == rows["late"]["outcome"] == "passed"
        ended = [e for e in ledger(root) if e["type"] == "experiment.approach-ended"]
        assert sorted(e["data"]["approach"] for e in ended) == ["honest", "late"]  # once each
        # The resumed attempt's budget counts the time the killed run spent, not a fresh one.
        again = [
            e["data"]
            for e in ledger(root)[len(killed) :]
            if e["type"] == "experiment.attempt-began" and e["data"]["approach"] == "late"
        ]
        assert again and again[0]["attempt"] == 1 and again[0]["spent_s"] >= spent - 0.001
        assert rows["late"]["seconds"] >= spent
        chosen = consort("experiment", "select", "F1/S1", "late", cwd=root)
        assert chosen.returncode == 0, chosen.stdout + chosen.stderr
        assert consort("verify", cwd=root).returncode == 0
        assert not any(n.startswith("experiment/") for n in databases(root))
    finally:
        destroy_project_cluster(root)


@pytest.mark.timeout(900)
def test_a_story_the_design_marks_is_raced_by_drive_which_then_waits_for_a_person(
    tmp_path: Path,
):
    """The test list marks S1's first cycle for two approaches: `consort drive` builds up to its
    GREEN, races them, and stops (exit 0) at a step only a person takes; after the selection it
    goes on, and the cycle the mark leaves out is built by the plain driver."""
    import re
    import shutil

    root = tmp_path / "stockflow"
    playbook = tmp_path / "playbook"
    shutil.copytree(PLAYBOOK, playbook)
    test_list = playbook / "F1-stock-visibility" / "test-list" / "outputs" / "test-list"
    design = json.loads(test_list.read_text())
    design["experiments"] = [{"story": "S1", "approaches": 2, "items": ["T1"]}]
    test_list.write_text(json.dumps(design, indent=2))
    ok(consort("demo", str(root), "--setup-only", cwd=root.parent))
    config = root / "consort.toml"
    text = re.sub(r'(?m)^dir = ".*"$', f"dir = {json.dumps(str(playbook))}", config.read_text())
    assert json.dumps(str(playbook)) in text
    config.write_text(
        text
        + "\n[experiment]\nconcurrency = 2\nmax_cycles = 2\n"
        + approach("honest", "honest")
        + approach("never", "never")
    )
    git(root, "add", "consort.toml")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "experiments")
    try:
        driven = consort("drive", cwd=root, timeout=900)
        assert driven.returncode == 0, driven.stdout + driven.stderr
        assert "consort experiment select F1/S1" in driven.stdout + driven.stderr
        events = ledger(root)
        started = [e for e in events if e["type"] == "experiment.started"]
        assert len(started) == 1 and started[0]["subject"] == SUBJECT
        assert started[0]["actor"] == "orchestrator"  # the approved design asked for it
        assert [a["name"] for a in started[0]["data"]["approaches"]] == ["honest", "never"]
        assert not any(e["type"] == "green.verified" for e in events)
        waiting = consort("next", "--json", cwd=root)
        assert waiting.returncode == 0, waiting.stdout + waiting.stderr
        assert json.loads(waiting.stdout)["kind"] == "await-experiment"
        # A second drive does not race again: it stops where it stopped.
        again = consort("drive", cwd=root, timeout=300)
        assert again.returncode == 0
        assert len([e for e in ledger(root) if e["type"] == "experiment.started"]) == 1
        (shown,) = json.loads(ok(consort("status", "--json", cwd=root)))["experiments"]
        assert shown["condition"] == "waiting"
        assert shown["commands"][0] == "consort experiment select F1/S1 honest"
        ok(consort("experiment", "select", "F1/S1", "honest", cwd=root))
        going = consort("drive", "--max-steps", "2", cwd=root, timeout=900)
        assert going.returncode == 0, going.stdout + going.stderr
        after = json.loads(ok(consort("next", "--json", cwd=root)))
        assert (after["kind"], after["role"], after["step"]) == ("run-turn", "driver", "green")
        assert after["reason"].startswith("T2:")
        assert consort("verify", cwd=root).returncode == 0
    finally:
        destroy_project_cluster(root)
