"""A spike explored by an agent turn Consort starts: the real `consort` CLI, real git, the
embedded PostgreSQL, a real command agent (tests/agents/explorer_agent.py) in the turn sandbox.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psycopg
import pytest

from consort.core.ledger import EventType, Ledger, ledger_path
from tests.helpers import consort, env_url, git, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_build_lane import _new_project, configure

pytestmark = pytest.mark.integration

EXPLORER = Path(__file__).parents[1] / "agents" / "explorer_agent.py"
QUESTION = "Should bins be keyed by code, and is an index on aisle worth it?"


def _use_explorer(root: Path) -> None:
    text = (root / "consort.toml").read_text()
    command = json.dumps([sys.executable, str(EXPLORER)])
    (root / "consort.toml").write_text(
        text + f'\n[agents.explorer]\nadapter = "command"\ncommand = {command}\n'
    )


def _databases(root: Path) -> set[str]:
    url = ok(consort("db", "url", "main", cwd=root)).strip()
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}


def _spike_events(root: Path, name: str) -> list:
    return [e for e in Ledger(ledger_path(root / ".consort")).read() if e.subject == name]


def test_an_explorer_turn_works_in_its_spike_and_its_notes_are_kept(fresh_project: Path) -> None:
    root = fresh_project
    _use_explorer(root)
    with psycopg.connect(env_url(root)) as conn:
        conn.execute("CREATE TABLE inherited (n int)")
        conn.execute("INSERT INTO inherited SELECT generate_series(1, 12)")
    before = _databases(root)

    found = json.loads(
        ok(consort("spike", "bins", "--ttl", "1h", "--question", QUESTION, "--json", cwd=root))
    )
    explored = found["exploration"]
    assert explored["ok"], explored
    assert explored["killed"] is None and explored["ended"] is None
    assert 3000 < explored["time_box_s"] <= 3600  # the rest of the spike's hour, not 4 h
    worktree = root / found["worktree"]
    notes = (worktree / "notes.md").read_text()
    assert f"Question: {QUESTION}" in notes
    assert "Bins spread over 7 aisles" in notes
    assert "held 12 rows of the parent's inherited table" in notes  # a copy of the parent's
    # Its database was a scratch child of the spike's, neither the spike's own nor the parent's,
    # and it was dropped after the turn; the spike's database never saw the explorer's table.
    worked_in = notes.split("Worked in database ", 1)[1].split(".", 1)[0]
    main_database = ok(consort("db", "url", "main", cwd=root)).strip().rsplit("/", 1)[1]
    assert worked_in not in {found["database"], main_database} and worked_in not in before
    assert worked_in not in _databases(root)
    with psycopg.connect(env_url(worktree)) as conn:
        assert conn.execute("SELECT to_regclass('bins')").fetchone() == (None,)
    assert (worktree / "probe.py").is_file()  # its code stays in the spike, until the end

    # The ledger records the turn like any other: sandboxed, by the command adapter.
    events = _spike_events(root, "spike/bins")
    kinds = [e.type for e in events]
    assert kinds == [EventType.SPIKE_STARTED, EventType.TURN_STARTED, EventType.TURN_FINISHED]
    started, finished = events[1].data, events[2].data
    assert started["role"] == "explorer" and started["step"] == "explore"
    assert started["sandbox"] == "bwrap"
    assert finished["adapter"] == "command" and finished["exit_code"] == 0
    assert finished["turn"] == explored["turn"] and finished["duration_s"] > 0
    task = json.loads((root / ".consort" / "turns" / explored["turn"] / "task.json").read_text())
    assert task["role"] == "explorer" and task["writable"] == ["**"]
    assert Path(task["outputs"]["notes"]) == worktree / "notes.md"
    report = json.loads(ok(consort("report", "--json", cwd=root)))
    (spike_lane,) = [row for row in report["lanes"] if row["name"] == "spike"]
    assert spike_lane["turns"] == 1 and spike_lane["failed_turns"] == 0
    (row,) = [t for t in report["turns"] if t["turn"] == explored["turn"]]
    assert row["role"] == "explorer" and row["adapter"] == "command"

    ended = json.loads(ok(consort("spike", "end", "bins", "--json", cwd=root)))
    kept = root / ended["notes"]
    assert kept.read_text() == notes
    assert not worktree.exists() and git(root, "branch", "--list", "spike/bins") == ""
    assert _databases(root) == before
    verified = ok(consort("verify", cwd=root))
    assert "1 kept notes match their recorded hashes" in verified
    assert "explorer turns" in verified


def test_an_explorer_that_writes_nothing_fails_its_turn_and_the_spike_runs_on(
    fresh_project: Path,
) -> None:
    root = fresh_project
    (root / "consort.toml").write_text(
        (root / "consort.toml").read_text()
        + f'\n[agents.explorer]\nadapter = "command"\ncommand = {json.dumps(["true"])}\n'
    )
    ok(consort("spike", "idle", "--ttl", "1h", cwd=root))
    failed = consort("spike", "explore", "idle", "What is there?", "--json", cwd=root)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    explored = json.loads(failed.stdout)
    assert not explored["ok"]
    assert any("unchanged" in p for p in explored["problems"]), explored
    (turn_failed,) = [
        e for e in _spike_events(root, "spike/idle") if e.type is EventType.TURN_FAILED
    ]
    assert turn_failed.data["role"] == "explorer"
    listed = json.loads(ok(consort("spike", "list", "--json", cwd=root)))
    assert [s["condition"] for s in listed["spikes"]] == ["running"]
    ok(consort("spike", "end", "idle", cwd=root))
    ok(consort("verify", cwd=root))


def test_an_explorers_notes_reach_the_features_design_and_build_turns(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = _new_project(tmp_path_factory, "explored")
    try:
        _use_explorer(root)
        started = consort(
            "spike", "counter-bins", "--for", "F1", "--question", QUESTION, "--json", cwd=root
        )
        explored = json.loads(ok(started))
        assert explored["feature"] == "F1-counter" and explored["exploration"]["ok"]
        task = json.loads(
            (root / ".consort/turns" / explored["exploration"]["turn"] / "task.json").read_text()
        )
        assert task["feature"] == "F1-counter"
        assert "feature-request" in task["inputs"]  # what the feature says so far
        ok(consort("spike", "end", "counter-bins", cwd=root))
        configure(root, driver="noop")  # the build stops at the first GREEN, escalated
        _use_explorer(root)
        result = consort("drive", cwd=root)
        assert result.returncode == 3, result.stdout + result.stderr

        kept = root / ".consort" / "spikes" / "counter-bins" / "notes.md"
        assert "Bins spread over 7 aisles" in kept.read_text()
        tasks = [
            json.loads(p.read_text())
            for p in sorted((root / ".consort" / "turns").glob("*/task.json"))
            if json.loads(p.read_text())["role"] != "explorer"
        ]
        steps = {(t["role"], t["step"]) for t in tasks}
        assert ("driver", "green") in steps and ("spec-author", "spec") in steps
        for later in tasks:
            assert Path(later["inputs"]["spike-counter-bins"]) == kept, later["step"]
        ok(consort("verify", cwd=root))
    finally:
        destroy_project_cluster(root)


def test_an_explore_killed_mid_turn_leaves_nothing_the_next_commands_do_not_clear(
    fresh_project: Path,
) -> None:
    """kill -9 of `consort spike explore` while its agent runs: the agent (and what it started)
    ends with it, `branch gc` drops the turn's scratch database, and the spike goes on."""
    import os
    import secrets
    import signal
    import subprocess
    import time

    from tests.helpers import processes_naming

    root = fresh_project
    marker = f"killed-{secrets.token_hex(6)}"
    cheat = Path(__file__).parents[1] / "adversarial" / "explorer_turn_cheat.py"
    command = json.dumps([sys.executable, str(cheat), "linger", json.dumps({"marker": marker})])
    with (root / "consort.toml").open("a") as config:
        config.write(f'\n[agents.explorer]\nadapter = "command"\ncommand = {command}\n')
    spike = json.loads(ok(consort("spike", "crash", "--ttl", "1h", "--json", cwd=root)))
    paired = _databases(root)
    env = dict(os.environ, COLUMNS="200")
    env.pop("CONSORT_TASK", None)
    exploring = subprocess.Popen(
        [sys.executable, "-m", "consort", "spike", "explore", "crash", "Survive a kill?"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        for _ in range(600):  # until the agent's daemon runs
            if processes_naming(marker):
                break
            assert exploring.poll() is None, "the explorer turn ended before it was killed"
            time.sleep(0.5)
        else:
            pytest.fail("the explorer's daemon never started")
        assert len(_databases(root) - paired) == 1  # the turn's scratch database
    finally:
        os.killpg(exploring.pid, signal.SIGKILL)
        exploring.wait()
    for _ in range(120):  # the sandbox dies with its parent; give the kernel its moment
        if not processes_naming(marker):
            break
        time.sleep(0.5)
    assert processes_naming(marker) == []

    ok(consort("branch", "gc", cwd=root))
    assert _databases(root) == paired
    ok(consort("verify", cwd=root))
    ended = json.loads(ok(consort("spike", "end", "crash", "--json", cwd=root)))
    assert "Written before the time box ran out." in (root / ended["notes"]).read_text()
    assert spike["database"] not in _databases(root)
    ok(consort("verify", cwd=root))


def test_a_claude_explorer_is_recorded_with_its_model_tokens_and_cost(
    fresh_project: Path, tmp_path: Path
) -> None:
    """The explorer run by the claude adapter (the fake `claude` of tests/fakes, which runs the
    real `consort guard` as its hook), chosen on the command line over [agents.explorer]."""
    from tests.fakes import FAKES, install_fakes, write_scenario

    root = fresh_project
    claude = install_fakes(tmp_path / "bin") / "claude"
    notes = root / ".consort" / "worktrees" / "_spikes" / "priced" / "notes.md"
    scenario = write_scenario(
        tmp_path / "scenario.json",
        steps=[
            {"init": True},
            {"write": str(notes), "content": "## Learned\n\nAisles need an index.\n"},
            {"result": {"result": "noted", "total_cost_usd": 0.42}},
        ],
    )
    with (root / "consort.toml").open("a") as config:
        config.write(
            f'\n[agents.explorer]\nadapter = "command"\ncommand = [{json.dumps(str(claude))}]\n'
            f"env = {{ FAKE_CLAUDE_SCENARIO = {json.dumps(str(scenario))} }}\n"
            "retries = 0\n"
            f"read_only = [{json.dumps(str(FAKES))}, {json.dumps(str(scenario))}]\n"
        )
    found = consort(
        "spike", "priced", "--question", "Index aisles?", "--agent", "claude",
        "--model", "claude-explorer-test", "--json", cwd=root,
    )  # fmt: skip
    explored = json.loads(ok(found))["exploration"]
    assert explored["ok"], explored
    assert notes.read_text() == "## Learned\n\nAisles need an index.\n"
    (finished,) = [
        e for e in _spike_events(root, "spike/priced") if e.type is EventType.TURN_FINISHED
    ]
    assert finished.data["adapter"] == "claude" and finished.data["program"] == "Claude Code"
    report = json.loads(ok(consort("report", "--json", cwd=root)))
    (row,) = [t for t in report["turns"] if t["turn"] == explored["turn"]]
    assert row["lane"] == "spike" and row["role"] == "explorer"
    assert row["model"] == "claude-explorer-test"
    assert row["cost_usd"] == 0.42 and row["tokens"] == 180
    ok(consort("spike", "end", "priced", cwd=root))
    ok(consort("verify", cwd=root))


def test_a_person_works_on_beside_an_explorer_and_nothing_of_theirs_is_put_back(
    fresh_project: Path,
) -> None:
    """While the explorer runs (hours, perhaps), the person edits and commits in the main
    checkout and makes a branch: none of it is the explorer's, none of it is reverted."""
    import os
    import subprocess
    import time

    root = fresh_project
    command = json.dumps([sys.executable, str(EXPLORER), "wait"])
    with (root / "consort.toml").open("a") as config:
        config.write(f'\n[agents.explorer]\nadapter = "command"\ncommand = {command}\n')
    (root / "app.py").write_text("VERSION = 1\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    spike = json.loads(ok(consort("spike", "beside", "--ttl", "1h", "--json", cwd=root)))
    worktree = root / spike["worktree"]
    env = dict(os.environ, COLUMNS="200")
    env.pop("CONSORT_TASK", None)
    exploring = subprocess.Popen(
        [sys.executable, "-m", "consort", "spike", "explore", "beside", QUESTION, "--json"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(600):
            if (worktree / "ready").exists():
                break
            assert exploring.poll() is None, exploring.communicate()
            time.sleep(0.5)
        else:
            pytest.fail("the explorer never started")
        (root / "app.py").write_text("VERSION = 2\n")
        (root / "draft.md").write_text("the person's own draft\n")
        git(root, "add", "app.py")
        git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "person")
        git(root, "branch", "their-idea")
        head = git(root, "rev-parse", "HEAD")
        (worktree / "go").write_text("go\n")
        out, err = exploring.communicate(timeout=600)
    finally:
        if exploring.poll() is None:
            exploring.kill()
    assert exploring.returncode == 0, out + err
    explored = json.loads(out)
    assert explored["ok"] and explored["problems"] == []
    assert (root / "app.py").read_text() == "VERSION = 2\n"
    assert (root / "draft.md").read_text() == "the person's own draft\n"
    assert git(root, "rev-parse", "main") == head
    assert git(root, "rev-parse", "their-idea") == head
    kinds = [e.type for e in _spike_events(root, "spike/beside")]
    assert EventType.VIOLATION_RECORDED not in kinds
    ok(consort("spike", "end", "beside", cwd=root))
    ok(consort("verify", cwd=root))
