"""`consort status` and `consort next` keep their answers, and a kept answer is always the one
a fresh derivation gives: after an intake, a hand edit, a broken artifact, a new or deleted
branch. Fail-closed: nothing changed in the files may be answered from before the change."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from consort.cli.plain import TERMINAL_SWITCHES
from tests.helpers import consort, git, ok

pytestmark = pytest.mark.integration


def _answers(root: Path) -> tuple[dict, dict]:
    status = json.loads(ok(consort("status", "--json", cwd=root)))
    nxt = json.loads(ok(consort("next", "--json", cwd=root)))
    return status, nxt


def _fresh(root: Path) -> tuple[dict, dict]:
    """The answers derived from nothing kept."""
    shutil.rmtree(root / ".consort" / "run" / "cache", ignore_errors=True)
    (root / ".consort" / "run" / "branches.json").unlink(missing_ok=True)
    return _answers(root)


def _without_sizes(status: dict) -> dict:
    copy = json.loads(json.dumps(status))
    for row in copy["branches"]:
        row.pop("size_bytes")
    return copy


def _same(kept: tuple[dict, dict], fresh: tuple[dict, dict]) -> None:
    assert _without_sizes(kept[0]) == _without_sizes(fresh[0])
    assert kept[1] == fresh[1]


def test_kept_answers_follow_every_change(fresh_project: Path) -> None:
    root = fresh_project
    first = _fresh(root)
    assert (root / ".consort" / "run" / "cache").is_dir()
    again = _answers(root)
    _same(again, first)

    request = root / "request.md"
    request.write_text("Greet people\n\nSay hello to whoever asks.\n")
    ok(consort("intake", "feature", "--file", str(request), cwd=root))
    after_intake = _answers(root)
    assert after_intake[1] != first[1]
    assert [f["title"] for f in after_intake[0]["features"]] == ["Greet people"]
    _same(after_intake, _fresh(root))

    ledger = root / ".consort" / "ledger.jsonl"
    whole = ledger.read_text()
    ledger.write_text("".join(whole.splitlines(keepends=True)[:-1]))  # only the ledger changes
    shorter = _answers(root)
    assert shorter != after_intake
    _same(shorter, _fresh(root))
    ledger.write_text(whole)
    _same(_answers(root), after_intake)

    (feature,) = (root / ".consort" / "features").iterdir()
    spec = feature / "feature-spec.json"
    spec.write_text('{"stories": "not a list"}')  # a hand edit that does not validate
    broken = _answers(root)
    assert broken != after_intake
    _same(broken, _fresh(root))

    spec.unlink()
    _same(_answers(root), _fresh(root))
    (root / "consort.toml").write_text(
        (root / "consort.toml").read_text().replace('mode = "interactive"', 'mode = "proxy"')
    )
    _same(_answers(root), _fresh(root))


def test_the_branch_table_follows_new_and_deleted_branches(fresh_project: Path) -> None:
    root = fresh_project
    _fresh(root)
    ok(consort("branch", "create", "side", cwd=root))
    git(root, "checkout", "-q", "main")
    status, _ = _answers(root)
    rows = {row["name"]: row for row in status["branches"]}
    assert rows["side"]["pairing"] == "paired" and rows["side"]["database"]
    assert rows["side"]["parent"] == "main" and rows["main"]["current"] is True

    status, _ = _answers(root)  # from what the last read kept: the same table
    live = json.loads(ok(consort("branch", "list", "--json", cwd=root)))
    assert _without_sizes(status)["branches"] == _without_sizes({"branches": live})["branches"]
    for row in status["branches"]:
        assert isinstance(row["size_bytes"], int) and row["size_bytes"] > 0

    git(root, "branch", "-D", "side")  # plain git: the database stays
    status, _ = _answers(root)
    assert {r["name"]: r["pairing"] for r in status["branches"]}["side"] == "database only"
    ok(consort("branch", "gc", cwd=root))  # the database goes: the kept table is not used
    status, _ = _answers(root)
    assert [r["name"] for r in status["branches"]] == ["main"]


# Runs a command as `consort` does and writes, at its exit, the modules it loaded.
MODULES_AT_EXIT = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\n' + json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['consort', *sys.argv[1:]]\n"
    "from consort.cli.main import main\n"
    "main()\n"
)
# What a kept answer (and the ledger's table) needs none of, printed into a pipe.
NOT_ON_THE_KEPT_PATH = ("rich", "pydantic", "psycopg", "tempfile", "shutil", "_strptime")


def test_kept_answers_and_the_log_load_no_rich_models_or_driver(fresh_project: Path) -> None:
    root = fresh_project
    request = root / "request.md"
    request.write_text("Greet people\n\nSay hello to whoever asks.\n")
    ok(consort("intake", "feature", "--file", str(request), cwd=root))
    for command in ("status", "next"):
        ok(consort(command, cwd=root))  # derived once, and kept
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_SWITCHES}
    for command in ("status", "next", "log"):
        done = subprocess.run(
            [sys.executable, "-c", MODULES_AT_EXIT, command],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert "Greet people" in done.stdout or "greet-people" in done.stdout.lower(), command
        loaded = json.loads(done.stderr.splitlines()[-1])
        unwanted = [m for m in loaded if m.split(".")[0] in NOT_ON_THE_KEPT_PATH]
        assert unwanted == [], (command, unwanted)


def test_a_branch_table_read_from_the_server_loads_no_driver(fresh_project: Path) -> None:
    root = fresh_project
    ok(consort("branch", "create", "side", cwd=root))
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_SWITCHES}
    for command in (["status", "--json"], ["branch", "list", "--json"]):
        (root / ".consort" / "run" / "branches.json").unlink(missing_ok=True)
        done = subprocess.run(
            [sys.executable, "-c", MODULES_AT_EXIT, *command],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        out = (
            done.stdout
            if command[0] == "branch"
            else json.dumps(json.loads(done.stdout)["branches"])
        )
        rows = {row["name"]: row for row in json.loads(out)}
        assert rows["side"]["parent"] == "main" and rows["side"]["size_bytes"] > 0, command
        loaded = json.loads(done.stderr.splitlines()[-1])
        assert [m for m in loaded if m.split(".")[0] == "psycopg"] == [], command
        assert (root / ".consort" / "run" / "branches.json").exists()  # kept for the next


def test_a_drive_leaves_the_answers_status_and_next_would_derive(fresh_project: Path) -> None:
    root = fresh_project
    request = root / "request.md"
    request.write_text("Greet people\n\nSay hello to whoever asks.\n")
    ok(consort("intake", "feature", "--file", str(request), cwd=root))
    ok(consort("branch", "create", "side", cwd=root))
    git(root, "checkout", "-q", "main")
    shutil.rmtree(root / ".consort" / "run" / "cache", ignore_errors=True)
    (root / ".consort" / "run" / "branches.json").unlink(missing_ok=True)
    consort("drive", "--max-steps", "1", cwd=root)  # however its step ends
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_SWITCHES}
    kept = []
    for command in ("status", "next"):
        done = subprocess.run(
            [sys.executable, "-c", MODULES_AT_EXIT, command, "--json"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        loaded = json.loads(done.stderr.splitlines()[-1])
        unwanted = [m for m in loaded if m.split(".")[0] in NOT_ON_THE_KEPT_PATH]
        assert unwanted == [], (command, unwanted)
        kept.append(json.loads(done.stdout))
    status, nxt = kept
    assert {r["name"] for r in status["branches"]} == {"main", "side"}
    _same((status, nxt), _fresh(root))
