"""What a turn's sandbox costs: the same agent command run with and without it, in one run.

    python bench/sandbox.py [--runs N] [--files N]

Each turn goes through `run_agent_process`, as every adapter's does, in a story worktree of a
real git repository whose tree holds `--files` files (the .env search walks them). Sandboxed
turns pay for: building the spec (toolchains, git paths, the .env search), bubblewrap setting
up the namespaces and mounts, and Consort checking afterwards that no process of the namespace
is left. Runs alternate (plain, sandboxed, plain, ...) so that the machine's load falls on both
alike; the medians are compared.

Goal: <= 50 ms added per turn.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from consort.adapters.agents.command import Limits, run_agent_process
from consort.adapters.sandbox.bwrap import support
from consort.adapters.sandbox.policy import SandboxPolicy, TurnPaths, turn_spec
from consort.core.vocabulary import SandboxUse

GOAL_MS = 50.0
AGENT = (sys.executable, "-c", "import json, os; json.load(open(os.environ['CONSORT_TASK']))")


def git(cwd: Path, *args: str) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@localhost")
    env.update(GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@localhost")
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def layout(base: Path, files: int) -> tuple[Path, Path, Path]:
    root = base / "proj"
    (root / "src").mkdir(parents=True)
    for i in range(files):
        folder = root / "src" / f"pkg{i // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{i}.py").write_text(f"VALUE = {i}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    tree = root / ".consort" / "worktrees" / "F1" / "S1"
    git(root, "worktree", "add", "-q", "-b", "story/F1/S1", str(tree))
    turn = root / ".consort" / "turns" / "0001-driver-green"
    (turn / "outputs").mkdir(parents=True)
    (turn / "task.json").write_text('{"turn": "0001"}\n')
    return root, tree, turn


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    found = support()
    if not found.available or found.bwrap is None:
        print(f"no sandbox can be made here: {found.describe()}")
        return 1
    with tempfile.TemporaryDirectory() as folder:
        root, tree, turn = layout(Path(folder), args.files)
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(Path(folder) / "home"),
            "CONSORT_TASK": str(turn / "task.json"),
        }
        (Path(folder) / "home").mkdir()
        policy = SandboxPolicy(SandboxUse.BWRAP, found.bwrap, root)
        paths = TurnPaths(tree, True, turn, (), (turn / "outputs" / "x.json",), env, AGENT)

        def one(sandboxed: bool) -> float:
            started = time.perf_counter()
            outcome = run_agent_process(
                AGENT,
                cwd=tree,
                env=env,
                stdout_path=turn / "stdout",
                stderr_path=turn / "stderr",
                limits=Limits(),
                sandbox=policy.for_turn(paths) if sandboxed else None,
            )
            elapsed = time.perf_counter() - started
            if outcome.exit_code != 0:
                raise SystemExit(f"the agent failed: {(turn / 'stderr').read_text()}")
            return elapsed

        one(True)  # warm: the host's system view is computed once per process
        plain, boxed, specs = [], [], []
        for _ in range(args.runs):
            plain.append(one(False))
            boxed.append(one(True))
            started = time.perf_counter()
            turn_spec(policy, paths)
            specs.append(time.perf_counter() - started)
    base, sandboxed = statistics.median(plain), statistics.median(boxed)
    added_ms = (sandboxed - base) * 1000
    print(f"sandbox: {found.describe()}; {args.runs} turns each, tree of {args.files} files")
    print(f"{'what':<34}{'median ms':>10}")
    print(f"{'turn, unsandboxed (baseline)':<34}{base * 1000:>10.1f}")
    print(f"{'turn, sandboxed':<34}{sandboxed * 1000:>10.1f}")
    print(f"{'  of which: building the spec':<34}{statistics.median(specs) * 1000:>10.1f}")
    print(
        f"ratio {sandboxed / base:.2f}x; added per turn {added_ms:.1f} ms "
        f"(goal <= {GOAL_MS:.0f} ms): " + ("holds" if added_ms <= GOAL_MS else "MISSED")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
