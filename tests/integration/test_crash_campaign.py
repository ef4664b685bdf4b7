"""A small deterministic crash campaign, as `bench/crash.py --at` runs it: SIGKILLs fired exactly
when chosen steps begin (not after a delay, so nothing here depends on the machine's speed),
each project then finished by a plain `consort drive` and compared with an uninterrupted run:
verify, commits, ledger outcomes, no failed step, and nothing left behind."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.crash_campaign import BENCH

pytestmark = pytest.mark.integration


def test_kills_at_chosen_steps_are_finished_by_drive_alone() -> None:
    steps = ["worktree.add:group", "run.tests#3:server"]
    argv = [sys.executable, str(BENCH), "--json"] + [f"--at={step}" for step in steps]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
    assert done.stdout.strip(), done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["failures"] == {}, done.stderr[-3000:]
    assert done.returncode == 0
    assert summary["trials"] == summary["kills"] == summary["finished by drive alone"] == 2
