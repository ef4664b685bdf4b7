"""A driver for experiments on StockFlow: one approach per MODE, serving the playbook's code.

usage: approach_agent.py PLAYBOOK_DIR MODE

MODE "honest" writes the recorded GREEN at its first attempt; "repairs" leaves the migration out
at its first attempt (the tests fail on a missing table) and writes it all at the next;
"never" writes code that cannot pass, every attempt; "slow" works far longer than any
budget a test gives it. "cheat-select" tries to select itself as
the experiment's winner before writing the honest code; "cheat-reach" also tries to write into
a sibling approach's worktree, the shared tests and the main checkout's ledger.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

playbook, mode = pathlib.Path(sys.argv[1]), sys.argv[2]
task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text())
step, attempt = task["step"], task["attempt"]
source = playbook / task["feature"] / task["story"] / task["item"] / "green" / "1" / "files"
if step not in ("green", "repair"):
    sys.exit(f"approach_agent.py drives GREEN and repairs only, not {step}")


def copy_all(skip_migrations: bool = False) -> None:
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_dir() or (skip_migrations and relative.parts[0] == "migrations"):
            continue
        target = pathlib.Path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


notes = []
if mode == "cheat-select":
    # The selection is a person's: run from inside the turn, it must be refused.
    for args in (["experiment", "select", "F1/S1", "cheat-select"], ["approve", "story", "F1/S1"]):
        done = subprocess.run(
            [sys.executable, "-m", "consort", *args], capture_output=True, text=True, check=False
        )
        notes.append(f"{' '.join(args)} -> {done.returncode}: {done.stdout}{done.stderr}")
    copy_all()
elif mode == "cheat-reach":
    here = pathlib.Path.cwd()
    targets = [
        here.parent / "honest" / "app" / "CHEAT.py",  # a sibling approach's worktree
        here / "tests" / "test_skus.py",  # the shared, frozen RED tests
    ]
    for parent in here.parents:  # the main checkout's ledger
        if (parent / ".consort" / "ledger.jsonl").exists():
            targets.append(parent / ".consort" / "ledger.jsonl")
    for target in targets:
        try:
            with open(target, "a") as handle:
                handle.write("\n# CHEAT\n")
            notes.append(f"wrote {target}")
        except OSError as exc:
            notes.append(f"could not write {target}: {exc}")
    copy_all()
elif mode == "honest":
    copy_all()
elif mode == "repairs":
    copy_all(skip_migrations=attempt == 1)
elif mode == "slow":
    import time

    time.sleep(600)
    copy_all()
elif mode == "never":
    pathlib.Path("app/never.py").write_text("def never():\n    return None  # not the answer\n")
else:
    sys.exit(f"unknown mode {mode}")
print("\n".join(notes))
