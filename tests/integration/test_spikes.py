"""Spikes end to end: the real `consort` CLI, real git and the embedded PostgreSQL server."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from consort.core.ledger import EventType, Ledger, ledger_path
from tests.helpers import consort, env_url, git, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_build_lane import _new_project, configure

pytestmark = pytest.mark.integration

RECORDING = Path(__file__).resolve().parents[1] / "fixtures" / "replay"
REQUEST = "Stock visibility\n\nWarehouse staff file stock counts and see stock by location.\n"


def _databases(project: Path) -> set[str]:
    url = ok(consort("db", "url", "main", cwd=project)).strip()
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}


def _start(project: Path, *args: str) -> dict:
    return json.loads(ok(consort("spike", *args, "--json", cwd=project)))


def _events(project: Path, kind: EventType) -> list:
    return [e for e in Ledger(ledger_path(project / ".consort")).read() if e.type is kind]


def _of_spike(project: Path, kind: EventType, name: str) -> list:
    return [e for e in _events(project, kind) if e.data["name"] == name]


def test_a_spike_explores_a_copy_and_leaves_only_its_notes(project: Path) -> None:
    with psycopg.connect(env_url(project)) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bins (code text PRIMARY KEY, qty int)")
        conn.execute("INSERT INTO bins VALUES ('B-1', 3) ON CONFLICT DO NOTHING")

    spike = _start(project, "try-bins", "--ttl", "2h")
    assert spike["condition"] == "running" and spike["parent"] == "main"
    assert 7100 < spike["remaining_s"] <= 7200
    worktree = project / spike["worktree"]
    assert git(worktree, "branch", "--show-current") == "spike/try-bins"
    url = env_url(worktree)
    assert url is not None and url.endswith("/" + spike["database"])
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT qty FROM bins WHERE code = 'B-1'").fetchone() == (3,)
        conn.execute("ALTER TABLE bins ADD COLUMN aisle text")
        conn.execute("UPDATE bins SET qty = 42")
    with psycopg.connect(env_url(project)) as conn:
        assert conn.execute("SELECT qty FROM bins WHERE code = 'B-1'").fetchone() == (3,)
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'bins'"
        ).fetchall()
    assert ("aisle",) not in columns

    (worktree / "explore.py").write_text("print('throwaway')\n")
    git(worktree, "add", "explore.py")
    git(worktree, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qm", "explore")
    notes = worktree / "notes.md"
    notes.write_text(notes.read_text() + "\nAn aisle column is all it takes.\n")
    head = git(worktree, "rev-parse", "HEAD")

    refused = consort("spike", "try-bins", cwd=project)
    assert refused.returncode == 2 and "started already" in refused.stderr

    ended = json.loads(ok(consort("spike", "end", "try-bins", "--json", cwd=project)))
    assert ended["notes"] == ".consort/spikes/try-bins/notes.md"
    assert ended["removed_worktree"] and ended["removed_branch"] and ended["dropped_database"]
    kept = project / ended["notes"]
    assert "An aisle column is all it takes." in kept.read_text()
    assert not worktree.exists()
    assert git(project, "branch", "--list", "spike/try-bins") == ""
    assert spike["database"] not in _databases(project)
    assert "try-bins" not in git(project, "worktree", "list")
    assert "spike/try-bins" not in ok(consort("branch", "list", cwd=project))

    (start,) = [
        e for e in _events(project, EventType.SPIKE_STARTED) if e.data["name"] == "try-bins"
    ]
    (end,) = [e for e in _events(project, EventType.SPIKE_ENDED) if e.data["name"] == "try-bins"]
    assert start.subject == end.subject == "spike/try-bins"
    assert start.data["ttl_s"] == 7200.0 and start.data["database"] == spike["database"]
    assert end.data["reason"] == "ended" and end.data["head"] == head
    assert end.data["notes_sha256"] == hashlib.sha256(kept.read_bytes()).hexdigest()

    again = consort("spike", "end", "try-bins", cwd=project)
    assert again.returncode == 2 and "ended already" in again.stderr
    reused = consort("spike", "try-bins", cwd=project)
    assert reused.returncode == 2 and "used once" in reused.stderr
    assert "kept notes match their recorded hashes" in ok(consort("verify", cwd=project))

    # The kept notes are evidence: changed afterwards, `verify` says so (integrity, exit 4).
    original = kept.read_bytes()
    kept.write_text("Nothing to see.\n")
    try:
        drifted = consort("verify", cwd=project)
        assert drifted.returncode == 4
        assert "try-bins" in drifted.stdout + drifted.stderr
    finally:
        kept.write_bytes(original)
    ok(consort("verify", cwd=project))


def test_kept_notes_are_evidence_the_project_commits_not_ignored(project: Path) -> None:
    ok(consort("spike", "kept", cwd=project))
    ok(consort("spike", "end", "kept", cwd=project))
    notes = ".consort/spikes/kept/notes.md"
    assert (project / notes).is_file()
    ignored = subprocess.run(["git", "check-ignore", "-q", notes], cwd=project, check=False)
    assert ignored.returncode == 1  # 1: not ignored


def test_an_expired_spike_is_collected_by_list_and_keeps_its_notes(project: Path) -> None:
    spike = _start(project, "short-lived", "--ttl", "1s")
    worktree = project / spike["worktree"]
    (worktree / "notes.md").write_text("# short-lived\n\nNothing came of it.\n")
    time.sleep(1.5)  # past a one-second time box, whatever the machine's speed

    listed = json.loads(ok(consort("spike", "list", "--json", cwd=project)))
    collected = {c["name"]: c for c in listed["collected"]}
    assert collected["short-lived"]["reason"] == "expired"
    row = next(s for s in listed["spikes"] if s["name"] == "short-lived")
    assert row["condition"] == "ended" and row["end_reason"] == "expired"
    assert not worktree.exists()
    assert spike["database"] not in _databases(project)
    kept = project / ".consort" / "spikes" / "short-lived" / "notes.md"
    assert kept.read_text() == "# short-lived\n\nNothing came of it.\n"
    (end,) = _of_spike(project, EventType.SPIKE_ENDED, "short-lived")
    assert end.actor.value == "orchestrator"
    assert "no spike has expired" in ok(consort("spike", "gc", cwd=project))


def test_gc_collects_expired_spikes_and_leaves_running_ones(project: Path) -> None:
    stays = _start(project, "stays", "--ttl", "1h")
    goes = _start(project, "goes", "--ttl", "1s")
    time.sleep(1.5)
    out = ok(consort("spike", "gc", cwd=project))
    assert "goes" in out and "stays" not in out
    assert (project / stays["worktree"]).is_dir()
    assert not (project / goes["worktree"]).exists()
    assert stays["database"] in _databases(project)
    ok(consort("spike", "end", "stays", cwd=project))


def test_a_spike_for_a_feature_gives_its_notes_to_the_features_design_turns(
    fresh_project: Path,
) -> None:
    root = fresh_project
    (root / "consort.toml").write_text(
        f'[agents]\ndefault = "replay"\ndir = {json.dumps(str(RECORDING))}\n'
    )
    request = root.parent / "request.md"
    request.write_text(REQUEST)
    ok(
        consort(
            "intake", "feature", "--file", str(request), "--title", "Stock visibility", cwd=root
        )
    )
    (feature,) = [e.subject for e in _events(root, EventType.FEATURE_CREATED)]

    spike = _start(root, "idea", "--for", "F1", "--ttl", "30m")
    assert spike["feature"] == feature
    (root / spike["worktree"] / "notes.md").write_text("Counts need a location, always.\n")
    ok(consort("spike", "end", "idea", cwd=root))
    listed = json.loads(ok(consort("spike", "list", "--json", cwd=root)))
    assert [s["feature"] for s in listed["spikes"]] == [feature]

    ok(consort("drive", "--max-steps", "1", cwd=root))
    (task_file,) = sorted((root / ".consort" / "turns").glob("*/task.json"))
    task = json.loads(task_file.read_text())
    assert task["step"] == "spec"
    kept = root / ".consort" / "spikes" / "idea" / "notes.md"
    assert Path(task["inputs"]["spike-idea"]) == kept
    assert kept.read_text() == "Counts need a location, always.\n"


def test_drive_ends_a_spike_whose_time_ran_out_and_its_notes_reach_the_next_turn(
    fresh_project: Path,
) -> None:
    """No one ran `spike gc`: the time box holds anyway, and the notes are not held back."""
    root = fresh_project
    (root / "consort.toml").write_text(
        f'[agents]\ndefault = "replay"\ndir = {json.dumps(str(RECORDING))}\n'
    )
    request = root.parent / "request.md"
    request.write_text(REQUEST)
    ok(consort("intake", "feature", "--file", str(request), "--title", "Stock", cwd=root))
    spike = _start(root, "brief", "--for", "F1", "--ttl", "1s")
    (root / spike["worktree"] / "notes.md").write_text("Locations first.\n")
    time.sleep(1.5)  # past a one-second time box, whatever the machine's speed

    driven = consort("drive", "--max-steps", "1", cwd=root)
    assert driven.returncode == 0, driven.stdout + driven.stderr
    assert "spike brief ran out of time" in driven.stdout + driven.stderr
    (end,) = _of_spike(root, EventType.SPIKE_ENDED, "brief")
    assert end.data["reason"] == "expired" and end.actor.value == "orchestrator"
    assert not (root / spike["worktree"]).exists()
    (task_file,) = sorted((root / ".consort" / "turns").glob("*/task.json"))
    task = json.loads(task_file.read_text())
    kept = root / ".consort" / "spikes" / "brief" / "notes.md"
    assert Path(task["inputs"]["spike-brief"]) == kept
    assert kept.read_text() == "Locations first.\n"


def test_a_spike_for_an_unknown_feature_is_refused_and_leaves_nothing(project: Path) -> None:
    before = _databases(project)
    result = consort("spike", "lost", "--for", "F99", cwd=project)
    assert result.returncode == 2 and "no feature" in result.stderr
    assert _databases(project) == before
    assert git(project, "branch", "--list", "spike/lost") == ""


def test_a_features_build_turns_get_its_spikes_notes(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = _new_project(tmp_path_factory, "spiked")
    try:
        spike = _start(root, "counter-idea", "--for", "F1")
        (root / spike["worktree"] / "notes.md").write_text("Start the counter at zero.\n")
        ok(consort("spike", "end", "counter-idea", cwd=root))
        configure(root, driver="noop")  # the build stops at the first GREEN, escalated
        result = consort("drive", cwd=root)
        assert result.returncode == 3, result.stdout + result.stderr

        kept = root / ".consort" / "spikes" / "counter-idea" / "notes.md"
        tasks = [
            json.loads(p.read_text())
            for p in sorted((root / ".consort" / "turns").glob("*/task.json"))
        ]
        steps = {(t["role"], t["step"]) for t in tasks}
        assert ("driver", "green") in steps and ("spec-author", "spec") in steps
        for task in tasks:
            assert Path(task["inputs"]["spike-counter-idea"]) == kept, task["step"]
    finally:
        destroy_project_cluster(root)


def test_a_failed_start_leaves_nothing_and_a_leftover_branch_is_named_with_its_fix(
    project: Path,
) -> None:
    before = _databases(project)
    for point in ("db-copied", "branch-after-db"):
        failed = consort("spike", "doomed", cwd=project, env={"CONSORT_FAULT": point})
        assert failed.returncode == 1 and "injected failure" in failed.stderr
        assert _databases(project) == before
        assert git(project, "branch", "--list", "spike/doomed") == ""
        assert not (project / ".consort" / "worktrees" / "_spikes" / "doomed").exists()
        assert _of_spike(project, EventType.SPIKE_STARTED, "doomed") == []

    ok(consort("branch", "create", "spike/leftover", "--from", "main", cwd=project))
    refused = consort("spike", "leftover", cwd=project)
    assert refused.returncode == 2 and "did not finish" in refused.stderr
    assert "consort branch delete spike/leftover --force" in refused.stderr
    assert _of_spike(project, EventType.SPIKE_STARTED, "leftover") == []
    ok(consort("branch", "delete", "spike/leftover", "--force", cwd=project))
    ok(consort("spike", "leftover", cwd=project))
    ok(consort("spike", "end", "leftover", cwd=project))
