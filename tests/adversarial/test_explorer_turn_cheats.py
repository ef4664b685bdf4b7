"""Explorer agents that cheat from inside the turn Consort starts in their spike: the real
`consort` CLI, real git, the embedded PostgreSQL, real bubblewrap, real child processes.

The explorer (explorer_turn_cheat.py) is given only a scratch child of its spike's database and
the spike's worktree. Reaching the parent's database or the spike's own, the server's powers,
the project secret, the main checkout, another spike or another branch is refused or undone;
what it writes outside its scope in its own tree is reverted and recorded; a process it leaves
behind does not outlive the time box, which ends the turn and the spike; and notes that lead to
the secret are never kept.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from consort.core.ledger import EventType, Ledger, ledger_path
from tests.helpers import consort, env_url, git, ok, processes_naming
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

CHEAT = Path(__file__).parent / "explorer_turn_cheat.py"
OWN_SCRATCH_ONLY = {"own-table"}


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    project = tmp_path / "shop"
    try:
        ok(consort("init", str(project), cwd=tmp_path))
        yield project
    finally:
        destroy_project_cluster(project)


def _explorer(root: Path, mode: str, targets: dict[str, str]) -> None:
    command = json.dumps([sys.executable, str(CHEAT), mode, json.dumps(targets)])
    with (root / "consort.toml").open("a") as config:
        config.write(f'\n[agents.explorer]\nadapter = "command"\ncommand = {command}\n')


def _stock(url: str) -> list[tuple[str, int]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT sku, qty FROM stock ORDER BY sku").fetchall()


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {r[0] for r in rows.fetchall()}


def _databases(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database").fetchall()}


def _password(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


def _events(root: Path, subject: str) -> list:
    return [e for e in Ledger(ledger_path(root / ".consort")).read() if e.subject == subject]


def _heads(root: Path) -> dict[str, str]:
    lines = git(root, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    return dict(line.split(" ", 1) for line in lines)


def _hooks(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / ".git" / "hooks").iterdir()}


def test_an_explorer_reaches_nothing_beyond_its_spike(root: Path) -> None:
    main_url = env_url(root)
    assert main_url is not None
    with psycopg.connect(main_url) as conn:
        conn.execute("CREATE TABLE stock (sku text PRIMARY KEY, qty int NOT NULL)")
        conn.execute("INSERT INTO stock VALUES ('A-1', 5), ('B-2', 7)")
    other = json.loads(ok(consort("spike", "other", "--ttl", "1h", "--json", cwd=root)))
    other_notes = root / other["worktree"] / "notes.md"
    other_notes.write_text("the other spike's own notes\n")
    spike = json.loads(ok(consort("spike", "cheat", "--ttl", "1h", "--json", cwd=root)))
    worktree = root / spike["worktree"]
    spike_url = env_url(worktree)
    assert spike_url is not None
    tree_env = (worktree / ".env").read_text()
    config_path = worktree / "consort.toml"
    config = config_path.read_bytes() if config_path.exists() else None
    cluster_home = Path(json.loads((root / ".consort/db/cluster.json").read_text())["home"])
    cluster_file = next(p for p in sorted(cluster_home.rglob("*")) if p.is_file())
    ledger_before = (root / ".consort" / "ledger.jsonl").read_bytes()
    heads = _heads(root)
    databases = _databases(main_url)
    hooks = _hooks(root)
    _explorer(
        root,
        "reach",
        {
            "parent_db": main_url.rsplit("/", 1)[1],
            "spike_db": spike["database"],
            "secret": str(root / ".consort" / "db" / "secret"),
            "main_env": str(root / ".env"),
            "tree_env": str(worktree / ".env"),
            "other_notes": str(other_notes),
            "other_branch": other["branch"],
            "main_ledger": str(root / ".consort" / "ledger.jsonl"),
            "cluster": str(cluster_file),
            "root": str(root),
            "git_dir": str(root / ".git"),
        },
    )

    done = consort("spike", "explore", "cheat", "What can I reach?", "--json", cwd=root)
    assert done.returncode == 1, done.stdout + done.stderr  # its violations fail the turn
    explored = json.loads(done.stdout)
    turn = root / ".consort" / "turns" / explored["turn"]
    report = json.loads((turn / "stdout").read_text())
    results: dict[str, str] = report["results"]

    succeeded = {name for name, result in results.items() if result.startswith("succeeded")}
    # In its own tree it may write anything but these; they are reverted after the turn.
    reverted = {"write its consort.toml", "write a ledger in its tree"}
    assert succeeded == OWN_SCRATCH_ONLY | reverted, results
    seen = "\n".join(report["seen"])
    for credential in (
        _password(main_url),
        _password(spike_url),
        (root / ".consort" / "db" / "secret").read_text().strip(),
    ):
        assert credential not in seen
    assert "consort_admin" not in seen

    # Nothing outside its spike changed: the parent's data, the spike's own database, the main
    # checkout, the ledger (but for Consort's own records of the turn), the other spike, refs.
    assert _stock(main_url) == [("A-1", 5), ("B-2", 7)]
    assert "scratch" not in _tables(spike_url) and "scratch" not in _tables(main_url)
    assert not (root / "planted.py").exists()
    assert not (root / ".consort" / "spikes" / "forged.md").exists()
    assert (root / ".consort" / "ledger.jsonl").read_bytes().startswith(ledger_before)
    assert other_notes.read_text() == "the other spike's own notes\n"
    assert _heads(root) == heads
    assert _hooks(root) == hooks
    # What it wrote in its own tree outside its scope was put back, and recorded.
    assert (worktree / ".env").read_text() == tree_env
    assert (config_path.read_bytes() if config_path.exists() else None) == config
    assert not (worktree / ".consort" / "ledger.jsonl").exists()
    violations = {
        e.data["path"]
        for e in _events(root, "spike/cheat")
        if e.type is EventType.VIOLATION_RECORDED
    }
    assert {"consort.toml", ".consort/ledger.jsonl"} <= violations
    (failed,) = [e for e in _events(root, "spike/cheat") if e.type is EventType.TURN_FAILED]
    assert failed.data["role"] == "explorer"
    # No scratch database is left behind: only main's and the two spikes'. And the login the
    # explorer held (it could have written it anywhere it can write) no longer opens anything.
    assert _databases(main_url) == databases
    held = json.loads(report["seen"][0])["DATABASE_URL"]
    assert held.rsplit("/", 1)[1] not in databases
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(held, connect_timeout=10).close()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(held.rsplit("/", 1)[0] + "/" + spike["database"], connect_timeout=10)
    ok(consort("spike", "end", "cheat", cwd=root))
    ok(consort("spike", "end", "other", cwd=root))
    assert spike["database"] not in _databases(main_url)
    ok(consort("verify", cwd=root))


def test_an_explorer_does_not_outlive_its_time_box(root: Path) -> None:
    marker = f"linger-{secrets.token_hex(6)}"
    _explorer(root, "linger", {"marker": marker})
    main_url = env_url(root)
    assert main_url is not None
    before = _databases(main_url)

    done = consort("spike", "linger", "--ttl", "15s", "--question", "Outlast?", "--json", cwd=root)
    assert done.returncode == 1, done.stdout + done.stderr
    found = json.loads(done.stdout)
    explored = found["exploration"]
    assert explored["killed"] == "wall-clock"
    assert explored["time_box_s"] <= 15
    assert any("time box ran out" in p for p in explored["problems"]), explored
    assert explored["ended"]["reason"] == "expired"
    # The turn, its daemon, the spike's worktree, branch and databases: all gone with the box.
    assert processes_naming(marker) == []
    assert not (root / found["worktree"]).exists()
    assert git(root, "branch", "--list", "spike/linger") == ""
    assert _databases(main_url) == before
    kept = root / ".consort" / "spikes" / "linger" / "notes.md"
    assert "Written before the time box ran out." in kept.read_text()
    digest = hashlib.sha256(kept.read_bytes()).hexdigest()
    time.sleep(1.0)  # a daemon alive anywhere would have written again by now
    assert hashlib.sha256(kept.read_bytes()).hexdigest() == digest
    (ended,) = [e for e in _events(root, "spike/linger") if e.type is EventType.SPIKE_ENDED]
    assert ended.data["reason"] == "expired" and ended.data["notes_sha256"] == digest
    verified = ok(consort("verify", cwd=root))
    assert "1 explorer turns, each inside its spike's time box" in verified
    again = consort("spike", "explore", "linger", "Once more?", cwd=root)
    assert again.returncode == 2 and "has ended" in again.stderr


def test_notes_that_lead_to_the_secret_are_never_kept(root: Path) -> None:
    secret_path = root / ".consort" / "db" / "secret"
    _explorer(root, "link", {"secret": str(secret_path)})
    done = consort("spike", "leak", "--question", "Keep this?", "--json", cwd=root)
    assert done.returncode == 1, done.stdout + done.stderr
    explored = json.loads(done.stdout)["exploration"]
    assert any("is a link" in p for p in explored["problems"]), explored
    ended = json.loads(ok(consort("spike", "end", "leak", "--json", cwd=root)))
    assert ended["notes"] is None
    secret = secret_path.read_text().strip()
    for kept in (root / ".consort" / "spikes").rglob("*"):
        assert kept.is_dir() or secret not in kept.read_text(errors="replace")
    ok(consort("verify", cwd=root))
