"""What the VS Code extension costs: the status bar's refresh, starting the dashboard for the
editor, and a ledger event's trip through the panel's session, each against a baseline measured
in the same run.

    python bench/vscode_extension.py [--runs N] [--appends N] [--project DIR]

Makes a small project (`consort init`, one feature request: status and next have something to
say), or copies the one given with `--project` (the copy gets the appends). Runs the extension's
own compiled modules under Node (editors/vscode/test/harness/bench.ts; `bash
scripts/vscode-extension.sh` installs and builds them).

* **status refresh**: `consort status --json` and `consort next --json` side by side, as the
  status bar asks every 30 s and on each ledger change. Baseline: two bare interpreters side by
  side through the same spawn. Goal: median <= 0.6 s.
* **editor start**: `consort dashboard --editor` until its announcement is read. Baseline: one
  bare interpreter. Goal: median <= 2 s.
* **event through the session**: a ledger append (Consort's own writer) until the event is
  handed to the panel's `post` by the PageSession. Baseline: the same event on a direct stream
  from the same Node process. Goal: median <= 0.5 s (the dashboard's own goal for a page).

VS Code's own message passing to the webview is not in it (VS Code cannot run here). Prints
medians with [min-max], the ratio to the baseline and whether the goal holds. Exit 0 whenever it
could measure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTENSION = ROOT / "editors" / "vscode"
HARNESS = EXTENSION / "out" / "test" / "harness" / "bench.js"
CONSORT = [sys.executable, "-m", "consort"]
GOALS = {"status refresh": 0.6, "editor start": 2.0, "event through the session": 0.5}
WAIT_S = 60.0


def build() -> None:
    tsc = EXTENSION / "node_modules" / ".bin" / "tsc"
    if not tsc.exists():
        sys.exit("run `bash scripts/vscode-extension.sh` first (it installs TypeScript)")
    subprocess.run([str(tsc), "-p", str(EXTENSION)], check=True)


def make_project(base: Path) -> Path:
    root = base / "shop"
    subprocess.run([*CONSORT, "init", str(root)], check=True, capture_output=True, cwd=base)
    request = base / "request.md"
    request.write_text("Stock visibility\n\nShow the stock held at each location.\n")
    subprocess.run(
        [*CONSORT, "intake", "feature", "--file", str(request), "--title", "Stock visibility"],
        check=True,
        capture_output=True,
        cwd=root,
    )
    return root


def destroy(root: Path) -> None:
    subprocess.run([*CONSORT, "db", "stop"], cwd=root, capture_output=True, check=False)
    record = root / ".consort" / "db" / "cluster.json"
    with contextlib.suppress(FileNotFoundError, ValueError, KeyError):
        shutil.rmtree(json.loads(record.read_text())["home"], ignore_errors=True)


def harness_env(root: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("CONSORT_TASK", "PYTHONDONTWRITEBYTECODE")
    }
    env.update(
        CONSORT_BIN=str(Path(sys.executable).parent / "consort"),
        CONSORT_TEST_PROJECT=str(root),
        BENCH_PYTHON=sys.executable,
    )
    return env


def timings(root: Path, part: str, runs: int) -> tuple[list[float], list[float]]:
    done = subprocess.run(
        ["node", str(HARNESS), part, str(runs)],
        env=harness_env(root),
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return [line["value"] for line in lines], [line["baseline"] for line in lines]


def append_event(root: Path) -> int:
    from consort.core.ledger import Actor, Ledger, ledger_path
    from consort.core.ledger.events import DriveStopped

    ledger = Ledger.open_for_writing(ledger_path(root / ".consort"))
    return ledger.record(DriveStopped(reason="bench"), Actor.ORCHESTRATOR, "project").seq


def event_trips(root: Path, appends: int) -> tuple[list[float], list[float]]:
    events = (root / ".consort" / "ledger.jsonl").read_text().count("\n")
    env = {**harness_env(root), "BENCH_SINCE": str(events)}
    child = subprocess.Popen(
        ["node", str(HARNESS), "events"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    said: queue.Queue[dict[str, object]] = queue.Queue()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            said.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    session: list[float] = []
    direct: list[float] = []
    try:
        while "ready" not in said.get(timeout=WAIT_S):
            pass
        for _ in range(appends):
            began = time.time()
            seq = append_event(root)
            arrived: dict[str, float] = {}
            while len(arrived) < 2:
                line = said.get(timeout=WAIT_S)
                if line.get("seq") == seq:
                    arrived[str(line["path"])] = float(line["at"]) / 1000 - began  # type: ignore[arg-type]
            session.append(arrived["session"])
            direct.append(arrived["direct"])
            time.sleep(0.2)  # one append at a time: each trip measured alone
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=WAIT_S)
    return session, direct


def report(name: str, values: list[float], baseline: list[float]) -> None:
    median, base = statistics.median(values), statistics.median(baseline)
    goal = GOALS[name]
    held = "holds" if median <= goal else "MISSED"
    print(
        f"{name:<27} {median:.3f} s [{min(values):.3f}-{max(values):.3f}]  "
        f"baseline {base:.3f} s  ratio {median / base:.1f}x  goal <= {goal} s: {held}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--appends", type=int, default=20)
    parser.add_argument("--project", type=Path)
    args = parser.parse_args()
    build()
    with tempfile.TemporaryDirectory(prefix="consort-bench-vscode-") as scratch:
        base = Path(scratch)
        made = args.project is None
        if made:
            root = make_project(base)
        else:
            root = base / args.project.name
            shutil.copytree(args.project, root, symlinks=True)
        try:
            print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {root}")
            report("status refresh", *timings(root, "refresh", args.runs))
            report("editor start", *timings(root, "start", max(1, args.runs // 2)))
            report("event through the session", *event_trips(root, args.appends))
        finally:
            if made:
                destroy(root)


if __name__ == "__main__":
    main()
