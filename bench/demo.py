"""How long the StockFlow demo takes, per lane, and how much of it is Consort itself.

    python bench/demo.py

Runs `consort demo` in a temporary folder (the real thing, replayed agents, real PostgreSQL and
pytest) and prints: the total against the 60 s goal, the time per lane, and the orchestrator's
own overhead (branching, git, guard, report parsing, ledger) as a share of the total — the rest
being the test processes, the app's start, and the replayed agents. Then where the time went,
by kind of work (`timings`: the sandboxed test and migrate processes, the throwaway children's
creation, git, the agent turns...), each counted once, with this process's and the database
server's CPU time: on a loaded machine the wall times stretch with the load, so compare runs
by their shares and calls, or side by side.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 60.0


def _server_pid(root: Path) -> int | None:
    from consort.adapters.db.cluster import server_state

    record = root / ".consort" / "db" / "cluster.json"
    if not record.exists():
        return None
    return server_state(Path(json.loads(record.read_text())["home"])).pid


def main() -> int:
    import timings
    from consort.app import demo
    from consort.core.ledger import Ledger, ledger_path

    base = Path(tempfile.mkdtemp(prefix="consort-bench-demo-"))
    root = base / "stockflow"
    timed = timings.install()
    try:
        say = lambda _line: None  # noqa: E731 -- progress is not wanted here
        started = time.monotonic()
        project = demo.setup(root, say)
        setup_s = time.monotonic() - started
        server = _server_pid(root)
        server_before = timings.server_cpu(server) if server else 0.0
        report = demo.run(project, say)
        total = time.monotonic() - started
        server_s = (timings.server_cpu(server) if server else 0.0) - server_before
        if report.code != 0:
            print(f"the demo failed: {report.message}")
            return 1
        events = Ledger(ledger_path(project.state_dir)).read()
        runs = [
            e.data["run"]
            for e in events
            if isinstance(e.data.get("run"), dict) and "test_seconds" in e.data["run"]
        ]
        test_s = sum(float(r["test_seconds"]) for r in runs)
        overhead_s = sum(float(r["overhead_seconds"]) for r in runs)
        turns = [
            json.loads(p.read_text()) for p in (project.state_dir / "turns").glob("*/result.json")
        ]
        agent_s = sum(float(t["duration_s"]) for t in turns)
        rows = [
            ("setup (scaffold, database, intake)", setup_s),
            *((f"lane: {lane}", seconds) for lane, seconds in report.seconds.items()),
            ("total", total),
            ("  test processes (pytest, migrations)", test_s),
            ("  replayed agent turns", agent_s),
            ("  verification overhead (branch, run, parse)", overhead_s),
            (
                "  everything else (git, guard, ledger, app start)",
                total - test_s - agent_s - overhead_s,
            ),
        ]
        width = max(len(name) for name, _ in rows)
        print(f"{'what':<{width}}  seconds")
        for name, seconds in rows:
            print(f"{name:<{width}}  {seconds:7.1f}")
        own = total - test_s - agent_s
        print()
        verdict = "holds" if total <= GOAL_S else "does NOT hold"
        print(f"goal: whole demo <= {GOAL_S:.0f} s: {verdict} ({total:.1f} s)")
        print(f"Consort's own share of the total: {own / total:.0%} ({own:.1f} s of {total:.1f} s)")
        each = overhead_s / max(len(runs), 1)
        print(f"verifications: {len(runs)}, their overhead {each:.2f} s each")
        print()
        for line in timings.table(timed, total, server_s):
            print(line)
        return 0
    finally:
        timed.uninstall()
        subprocess.run(
            [sys.executable, "-m", "consort", "db", "stop"],
            cwd=root,
            capture_output=True,
            check=False,
        )
        record = root / ".consort" / "db" / "cluster.json"
        if record.exists():
            shutil.rmtree(json.loads(record.read_text())["home"], ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
