"""Run one agent turn in its sandbox, as the user this process runs as, and report on it.

usage: python -m tests.integration.sandbox_turn SPEC_JSON

SPEC_JSON names the project root, the working tree, the turn folder, the agent's argv and its
HOME; the turn runs through `run_agent_process` exactly as an adapter runs it, and one JSON line
on stdout says how it ended. Tests run this as root and, through setpriv, as an unprivileged
user, so that both ways bubblewrap works are exercised.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from consort.adapters.agents.command import Limits, run_agent_process
from consort.adapters.db.account import consort_private_folders
from consort.adapters.sandbox.bwrap import support
from consort.adapters.sandbox.policy import SandboxPolicy, TurnPaths
from consort.core.vocabulary import SandboxUse


def main() -> int:
    spec = json.loads(sys.argv[1])
    root, tree, turn = Path(spec["root"]), Path(spec["tree"]), Path(spec["turn"])
    found = support()
    if not found.available:
        print(json.dumps({"unavailable": found.describe()}))
        return 0
    policy = SandboxPolicy(
        SandboxUse.BWRAP,
        found.bwrap,
        root,
        state=tuple(Path(p) for p in spec.get("state", ())),
        hidden=consort_private_folders(),
    )
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": spec["home"],
        "LANG": "C.UTF-8",
        "CONSORT_TASK": str(turn / "task.json"),
    }
    argv = tuple(spec["argv"])
    sandbox = policy.for_turn(
        TurnPaths(
            workdir=tree,
            tree_writable=True,
            turn_folder=turn,
            inputs=(),
            outputs=(turn / "outputs" / "out.json",),
            env=env,
            command=argv,
        )
    )
    outcome = run_agent_process(
        argv,
        cwd=tree,
        env=env,
        stdout_path=turn / "stdout",
        stderr_path=turn / "stderr",
        limits=Limits(inactivity_s=float(spec.get("inactivity_s", 60)), grace_s=1.0),
        sandbox=sandbox,
    )
    print(
        json.dumps(
            {
                "exit_code": outcome.exit_code,
                "killed": outcome.killed.value if outcome.killed else None,
                "sandbox": outcome.sandbox.value,
                "uid": os.geteuid(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
