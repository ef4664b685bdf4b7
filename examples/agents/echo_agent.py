#!/usr/bin/env python3
"""A minimal Consort agent: reads its task, says what it was asked, writes nothing.

It shows the whole protocol (docs/agent-protocol.md) in a few lines: the task comes from the file
named by $CONSORT_TASK; the working tree is the current folder; outputs go to the absolute paths
in `outputs`; the exit code says whether the turn's work is done. A real agent would do the work
between reading the task and exiting; this one fails the turn honestly when it has outputs to
write (it cannot write valid artifacts), so Consort never takes its silence for work done.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    task = json.loads(Path(os.environ["CONSORT_TASK"]).read_text(encoding="utf-8"))
    where = "/".join(p for p in (task["feature"], task["story"], task["item"]) if p)
    print(
        f"turn {task['turn']}: {task['role']} {task['step']} for {where}, attempt {task['attempt']}"
    )
    print(f"working tree: {Path.cwd()}")
    for name, path in task["inputs"].items():
        print(f"input {name}: {path}")
    print(f"may change: {task['writable'] or 'nothing'}; must not change: {task['protected']}")
    if os.environ.get("DATABASE_URL"):
        print("this turn has its own scratch database in DATABASE_URL")
    if task["feedback"]:
        print(f"the previous attempt failed:\n{task['feedback']}")
    if task["outputs"]:
        print(f"not done: this example writes none of {sorted(task['outputs'])}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
