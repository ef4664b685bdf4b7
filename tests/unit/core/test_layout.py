"""The state folder's layout: the on-disk contract every version of Consort reads."""

from __future__ import annotations

from pathlib import Path

from consort.core.layout import IGNORED, STATE_GLOB, Layout
from consort.core.project import Project


def test_every_path_is_where_the_on_disk_contract_puts_it():
    root = Path("/p")
    layout = Layout.of(root)
    assert Project(root).layout == layout
    expected = {
        layout.ledger: ".consort/ledger.jsonl",
        layout.ledger_lock: ".consort/ledger.lock",
        layout.drive_lock: ".consort/drive.lock",
        layout.intake: ".consort/intake",
        layout.feature("F1-x"): ".consort/features/F1-x",
        layout.cycle_record("F1-x", "S1-y", "T3"): ".consort/cycles/F1-x/S1-y/T3/cycle.json",
        layout.role_prompt("driver"): ".consort/roles/driver.md",
        layout.runs: ".consort/runs",
        layout.turn("0007-driver-green"): ".consort/turns/0007-driver-green",
        layout.turn_output("0001-dba-db-design", "db-design.json"): (
            ".consort/turns/0001-dba-db-design/outputs/db-design.json"
        ),
        layout.worktree("F1-x", "S1-y"): ".consort/worktrees/F1-x/S1-y",
        layout.db: ".consort/db",
        layout.claude_manifest: ".consort/claude-manifest.json",
    }
    for path, text in expected.items():
        assert path == root / text


def test_what_git_ignores_and_what_no_agent_may_touch():
    assert IGNORED == (
        ".consort/db/",
        ".consort/run/",
        ".consort/turns/",
        ".consort/runs/",
        ".consort/worktrees/",
        ".consort/*.lock",
    )
    assert STATE_GLOB == ".consort/**"
