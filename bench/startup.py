"""How fast the CLI starts: `consort --version` against a bare interpreter, in the same run.

    python bench/startup.py [--runs N]

Goal: `consort --version` under 150 ms. Heavy modules (Rich, pydantic, psycopg) are imported
inside the commands, so start-up costs little more than Python itself plus click.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

GOAL_S = 0.150


def median_seconds(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    bare = median_seconds([sys.executable, "-c", "pass"], runs)
    version = median_seconds([sys.executable, "-m", "consort", "--version"], runs)
    helped = median_seconds([sys.executable, "-m", "consort", "--help"], runs)
    print(f"{'what':<28}{'median s':>10}{'vs bare python':>16}")
    for name, seconds in (
        ("python -c pass", bare),
        ("consort --version", version),
        ("consort --help", helped),
    ):
        print(f"{name:<28}{seconds:>10.3f}{seconds / bare:>15.1f}x")
    verdict = "holds" if version <= GOAL_S else "does NOT hold"
    print(f"goal: consort --version <= {GOAL_S * 1000:.0f} ms: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
