"""How fast the everyday read-only commands start and finish on a real project.

    python bench/commands.py [--runs N] [--project DIR]

Builds the StockFlow demo once in a temporary folder (`consort demo`: about a minute and a
half; every lane driven, so the ledger, the artifacts and the branches are those of a finished
feature), then times `consort status`, `consort next` and `consort log` in it, each as a fresh
process, beside a bare `python -c pass` measured in the same run. The commands take turns
(one run of each, then the next round), so that other work on the machine weighs on all of them
alike. `--project DIR` reuses a project made before (for example by `consort demo DIR`) and
leaves it alone.

Goal: each of the three <= 0.3 s. The table prints, per command, the median wall-clock time with
[min-max] and the median CPU time (user + system, of the process and its children), each with
its ratio to the bare interpreter. The header prints the load average: on a loaded machine the
wall-clock times grow with the load, while the CPU times stay close to what the command costs.
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
from pathlib import Path

GOAL_S = 0.300
CONSORT = [sys.executable, "-m", "consort"]
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "consort --version": [*CONSORT, "--version"],
    "consort status": [*CONSORT, "status"],
    "consort next": [*CONSORT, "next"],
    "consort log": [*CONSORT, "log"],
}
GOAL_COMMANDS = ("consort status", "consort next", "consort log")


Timing = tuple[float, float]  # (wall-clock seconds, CPU seconds)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], cwd: Path) -> Timing:
    cpu, started = _children_cpu(), time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - started, _children_cpu() - cpu


def measure(project: Path, runs: int) -> dict[str, list[Timing]]:
    times: dict[str, list[Timing]] = {name: [] for name in COMMANDS}
    for argv in COMMANDS.values():  # one untimed round: the OS caches and .pyc files settle
        timed(argv, project)
    for _ in range(runs):
        for name, argv in COMMANDS.items():
            times[name].append(timed(argv, project))
    return times


def build_demo(base: Path) -> Path:
    root = base / "stockflow"
    print(f"building the StockFlow demo in {root} (about a minute and a half) ...", file=sys.stderr)
    subprocess.run([*CONSORT, "demo", str(root)], check=True, capture_output=True)
    return root


def report(times: dict[str, list[Timing]], runs: int) -> None:
    wall = {name: [w for w, _ in values] for name, values in times.items()}
    cpu = {name: [c for _, c in values] for name, values in times.items()}
    bare_wall = statistics.median(wall["python -c pass"])
    bare_cpu = statistics.median(cpu["python -c pass"])
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"median of {runs} runs each, interleaved; load average {load} ({os.cpu_count()} cores)")
    print(f"{'what':<20}{'wall s':>8}{'[min-max]':>16}{'ratio':>8}{'cpu s':>9}{'ratio':>8}")
    for name in times:
        median, spent = statistics.median(wall[name]), statistics.median(cpu[name])
        spread = f"[{min(wall[name]):.3f}-{max(wall[name]):.3f}]"
        print(
            f"{name:<20}{median:>8.3f}{spread:>16}{median / bare_wall:>7.1f}x"
            f"{spent:>9.3f}{spent / max(bare_cpu, 0.001):>7.1f}x"
        )
    for name in GOAL_COMMANDS:
        median = statistics.median(wall[name])
        verdict = "holds" if median <= GOAL_S else "does NOT hold"
        print(f"goal: {name} <= {GOAL_S * 1000:.0f} ms: {verdict} ({median * 1000:.0f} ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--project", type=Path, help="An existing project to time the commands in.")
    args = parser.parse_args()
    if args.project is not None:
        report(measure(args.project.resolve(), args.runs), args.runs)
        return 0
    base = Path(tempfile.mkdtemp(prefix="consort-bench-commands-"))
    root = base / "stockflow"
    try:
        build_demo(base)
        report(measure(root, args.runs), args.runs)
        return 0
    finally:
        if root.exists():
            subprocess.run(
                [*CONSORT, "db", "destroy", "--yes"], cwd=root, capture_output=True, check=False
            )
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
