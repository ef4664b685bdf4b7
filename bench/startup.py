"""How fast the CLI starts: `consort --version`, and `status`, `next` and `log` on a project,
against a bare interpreter, in the same run.

    python bench/startup.py [--runs N]                 # on a fresh `consort demo --setup-only`
    python bench/startup.py --project DIR [--runs N]   # on a project of yours (a finished demo)

Goals: `consort --version` under 150 ms; `status`, `next` and `log` at most 0.3 s each on the
demo project. Heavy modules (Rich, pydantic, psycopg) are imported inside the commands; `status`
and `next` keep their derived answer until a file they read changes (`consort.core.derived_cache`)
and `status` reads the branch table without a connection while no database was made or dropped
(`consort.adapters.branch_rows`). Each of those two is timed twice: "derive" with the kept
answers removed before every run (what every call cost before they were kept, and what the
first call after a change costs: the baseline), and "kept" as a person running it again sees it.

Children run with byte-code writing allowed and after an untimed warm-up, as an installed
Consort runs (a PYTHONDONTWRITEBYTECODE=1 environment would otherwise compile every module of
Consort's on every run). The project is left as it was, and a fresh one removed.

Beside each median wall time goes the median CPU time (user and system) of the child and the
processes it waited for: on a machine other work shares, the wall time follows that work's load,
the CPU time far less, so two runs are best compared by it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

GOAL_S = 0.150
COMMAND_GOAL_S = 0.300
CACHES = (".consort/run/cache", ".consort/run/branches.json")


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["COLUMNS"] = "200"
    return env


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def median_seconds(
    argv: list[str],
    runs: int,
    *,
    cwd: Path | None = None,
    before: Callable[[], None] = lambda: None,
) -> tuple[float, float]:
    """The median wall time and the median CPU time of `runs` runs of `argv`."""
    env = child_env()
    subprocess.run(argv, check=True, capture_output=True, cwd=cwd, env=env)  # warm-up
    times, cpu = [], []
    for _ in range(runs):
        before()
        started, cpu_before = time.perf_counter(), children_cpu()
        subprocess.run(argv, check=True, capture_output=True, cwd=cwd, env=env)
        times.append(time.perf_counter() - started)
        cpu.append(children_cpu() - cpu_before)
    return statistics.median(times), statistics.median(cpu)


def forget(project: Path) -> Callable[[], None]:
    def remove() -> None:
        for name in CACHES:
            path = project / name
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)

    return remove


def fresh_demo(base: Path) -> Path:
    root = base / "stockflow"
    print("[bench] setting up a demo project (consort demo --setup-only)", file=sys.stderr)
    subprocess.run(
        [sys.executable, "-m", "consort", "demo", str(root), "--setup-only"],
        check=True,
        capture_output=True,
        env=child_env(),
    )
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--project", type=Path, help="an existing project (default: a new demo)")
    args = parser.parse_args()
    runs = args.runs
    base = None if args.project else Path(tempfile.mkdtemp(prefix="consort-bench-startup-"))
    project = args.project.resolve() if args.project else fresh_demo(base)  # type: ignore[arg-type]
    consort = [sys.executable, "-m", "consort"]
    try:
        bare = median_seconds([sys.executable, "-c", "pass"], runs)
        rows: list[tuple[str, tuple[float, float], float | None]] = [("python -c pass", bare, None)]
        rows.append(("consort --version", median_seconds([*consort, "--version"], runs), GOAL_S))
        rows.append(("consort --help", median_seconds([*consort, "--help"], runs), None))
        for command in ("status", "next"):
            derived = median_seconds([*consort, command], runs, cwd=project, before=forget(project))
            kept = median_seconds([*consort, command], runs, cwd=project)
            rows.append((f"consort {command} (derive)", derived, None))
            rows.append((f"consort {command} (kept)", kept, COMMAND_GOAL_S))
        rows.append(("consort log", median_seconds([*consort, "log"], runs, cwd=project), 0.3))
    finally:
        if base is not None:
            destroy = [*consort, "db", "destroy", "--yes"]
            subprocess.run(destroy, check=False, cwd=project, capture_output=True)
            shutil.rmtree(base, ignore_errors=True)
    print(f"project: {project}" + (" (removed)" if base is not None else ""))
    print(f"{'what':<28}{'median s':>10}{'vs bare python':>16}{'goal':>10}  holds{'cpu s':>9}")
    for name, (seconds, cpu), goal in rows:
        verdict = "" if goal is None else ("yes" if seconds <= goal else "NO")
        shown_goal = "" if goal is None else f"<= {goal:.2f}"
        ratio = seconds / bare[0]
        print(f"{name:<28}{seconds:>10.3f}{ratio:>15.1f}x{shown_goal:>10}  {verdict:<5}{cpu:>9.3f}")
    wall = {name: s for name, (s, _), _ in rows}
    for command in ("status", "next"):
        ratio = wall[f"consort {command} (derive)"] / wall[f"consort {command} (kept)"]
        print(f"consort {command}: kept answer {ratio:.1f}x faster than deriving it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
