"""Three approaches raced in parallel against one driver alone, in the same run.

    python bench/experiments.py                # 3 approaches, concurrency 3
    python bench/experiments.py --approaches 3 --concurrency 2

It scaffolds StockFlow with the real `consort demo --setup-only` (replayed design and RED, proxy
gates), drives it up to the first GREEN of S1 (the feature's and story's branches and the RED,
outside both measures), and then, on that same cycle:

1. **the race**: `consort experiment F1/S1 --approaches N`, every approach an honest command
   driver (tests/agents/approach_agent.py, sandboxed) that writes the recorded GREEN, each on its
   own paired branch and database, at most `--concurrency` at once; then `discard`, so that
2. **the baseline**: `consort drive --max-steps 1` makes the same GREEN with one such driver, the
   normal build's way.

Printed: the wall time of each, and the ratio race / baseline, beside the ratio of the
approaches' own test time (migrate + pytest of every approach's sealed run, against the
baseline's run); and where the race's time went, from its ledger: before the first attempt
(the approaches' branches and worktrees, and the first database copy), the attempts, and
after the last one ended. The goal, from the issue: the orchestrator adds no
serial bottleneck, i.e. the wall-time ratio is at most the test-time ratio. On 2 cores three
test runs at once contend for the CPU, so each of them takes longer than the baseline's: both
ratios show that.

A benchmark, never a test: it exits 0 when it could measure, whether the goal holds or not.
Everything it makes is removed at the end. Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
AGENT = HERE / "tests" / "agents" / "approach_agent.py"
PLAYBOOK = HERE / "src" / "consort" / "examples" / "stockflow" / "playbook"
SUBJECT = "F1/S1"


def consort(root: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    env.pop("CONSORT_TASK", None)
    done = subprocess.run(
        [sys.executable, "-m", "consort", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"consort {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@localhost", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def setup(root: Path, approaches: int, concurrency: int) -> None:
    consort(root.parent, "demo", str(root), "--setup-only")
    command = json.dumps([sys.executable, str(AGENT), str(PLAYBOOK), "honest"])
    tables = "".join(
        f'[experiment.approaches.a{n}]\nadapter = "command"\ncommand = {command}\n'
        for n in range(1, approaches + 1)
    )
    config = root / "consort.toml"
    text = config.read_text()
    # The baseline's driver is the same honest command driver as every approach's.
    text += f'\n[agents.driver]\nadapter = "command"\ncommand = {command}\n'
    text += f"\n[experiment]\nconcurrency = {concurrency}\nmax_cycles = 1\n{tables}"
    config.write_text(text)
    git(root, "add", "consort.toml")
    git(root, "commit", "-qm", "benchmark drivers")
    consort(root, "drive", "--until", "design")


def drive_to_green(root: Path) -> None:
    """Drive one step at a time until the next step is S1's first GREEN."""
    for _ in range(10):
        upcoming = json.loads(consort(root, "next", "--json").stdout)
        if (upcoming["role"], upcoming["step"]) == ("driver", "green"):
            return
        consort(root, "drive", "--max-steps", "1")
    raise SystemExit(f"never reached the first GREEN: {upcoming['reason']}")


def when(event: dict[str, Any]) -> float:
    from datetime import datetime

    return datetime.fromisoformat(str(event["time"]).replace("Z", "+00:00")).timestamp()


def ledger(root: Path) -> list[dict[str, Any]]:
    lines = (root / ".consort" / "ledger.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def own_time(run: dict[str, Any]) -> float:
    return float(run.get("test_seconds") or 0) + float(run.get("migrate_seconds") or 0)


def race(root: Path, approaches: int, concurrency: int) -> tuple[float, float, tuple[float, ...]]:
    """The race's wall time, its approaches' own test time, and where its time went."""
    say(f"racing {approaches} approaches ({concurrency} at a time) ...")
    before = len(ledger(root))
    started, began_at = time.monotonic(), time.time()
    raced = consort(root, "experiment", SUBJECT, "--approaches", str(approaches), "--json")
    race_wall, ended_at = time.monotonic() - started, time.time()
    if json.loads(raced.stdout)["recommendation"]["kind"] == "none":
        raise SystemExit("no approach passed: nothing comparable was measured")
    events = ledger(root)[before:]
    made = next(when(e) for e in events if e["type"] == "experiment.started")
    first = min(when(e) for e in events if e["type"] == "experiment.attempt-began")
    last = max(when(e) for e in events if e["type"] == "experiment.approach-ended")
    attempts = [e["data"] for e in events if e["type"] == "experiment.attempted"]
    race_tests = sum(own_time(a["run"]) for a in attempts if a.get("run"))
    return race_wall, race_tests, (made - began_at, first - made, last - first, ended_at - last)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--approaches", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="consort-bench-experiments-"))
    root = base / "stockflow"
    try:
        say("scaffolding StockFlow and driving its design ...")
        setup(root, args.approaches, args.concurrency)
        drive_to_green(root)
        race_wall, race_tests, phases = race(root, args.approaches, args.concurrency)
        consort(root, "experiment", "discard", SUBJECT, "--note", "benchmark")
        say("the same GREEN with one driver, the normal build's way ...")
        started = time.monotonic()
        consort(root, "drive", "--max-steps", "1")
        base_wall = time.monotonic() - started
        green = [e["data"] for e in ledger(root) if e["type"] == "green.verified"]
        if not green:
            raise SystemExit("the baseline's GREEN did not verify")
        base_tests = own_time(green[-1]["run"])
    finally:
        subprocess.run(
            [sys.executable, "-m", "consort", "db", "stop"],
            cwd=root,
            capture_output=True,
            check=False,
        )
        record = root / ".consort" / "db" / "cluster.json"
        with contextlib.suppress(OSError, ValueError, KeyError):
            shutil.rmtree(json.loads(record.read_text())["home"], ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
    wall_ratio = race_wall / base_wall
    test_ratio = race_tests / base_tests if base_tests else float("inf")
    holds = wall_ratio <= test_ratio
    print(
        f"cores: {os.cpu_count()}  approaches: {args.approaches}  concurrency: {args.concurrency}"
    )
    print(f"{'':28} {'race':>9} {'one':>9} {'ratio':>7}")
    print(f"{'wall time (s)':28} {race_wall:9.1f} {base_wall:9.1f} {wall_ratio:7.2f}")
    print(f"{'own test time (s)':28} {race_tests:9.1f} {base_tests:9.1f} {test_ratio:7.2f}")
    print(
        "race: {:.1f} s to experiment.started (start-up, the approaches' branches and "
        "worktrees), {:.1f} s to the first attempt (its database copy), {:.1f} s of "
        "attempts, {:.1f} s after the last ended".format(*phases)
    )
    verdict = "holds" if holds else "does not hold"
    print(f"goal: wall-time ratio <= test-time ratio ({wall_ratio:.2f} <= {test_ratio:.2f}):")
    print(f"  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
