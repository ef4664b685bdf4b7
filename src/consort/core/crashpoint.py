"""Named points where a crash test stops Consort on purpose, to kill it exactly there.

`CONSORT_CRASH_AT=<point>` in the environment of a Consort command makes it pause the first
time it reaches that point (`<point>#N`: the Nth time): it writes its pid into the file
`CONSORT_CRASH_FILE` names and waits until the file is gone; the crash campaign (`bench/crash.py
--at`) meanwhile kills whatever it aims at (the drive, its process group, the database server,
or both), then removes the file. With no file named, the process SIGKILLs itself there. Nothing
reaches these variables from an agent: turns and runs start from a minimal environment, and a
turn cannot start Consort.

The points (the steps that create or move something) are listed in `POINTS`.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

AT_VAR = "CONSORT_CRASH_AT"
FILE_VAR = "CONSORT_CRASH_FILE"
POLL_S = 0.02

POINTS = {
    "branch.copy": "a branch's database is being copied from its parent's",
    "worktree.add": "a story's worktree is being made",
    "run.tests": "a sealed run's test process is about to reach its migrated database",
    "promote.merge": "promote recorded its merge, before it moves the parent branch",
    "promote.checkout": "the parent branch has the merge, its checkout does not yet",
    "promote.migrate": "the parent's database is about to be migrated",
    "promote.delete": "promote has deleted the first of the feature's branches",
}

_reached: dict[str, int] = {}


def crash_point(name: str) -> None:
    """Pause (or die) here when the environment asks for it; otherwise nothing."""
    wanted = os.environ.get(AT_VAR)
    if not wanted:
        return
    point, _, nth = wanted.partition("#")
    if point != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] != (int(nth) if nth.isdigit() else 1):
        return
    marker = os.environ.get(FILE_VAR)
    if not marker:
        os.kill(os.getpid(), signal.SIGKILL)
        return
    path = Path(marker)
    path.write_text(f"{os.getpid()}\n", encoding="utf-8")
    while path.exists():
        time.sleep(POLL_S)
