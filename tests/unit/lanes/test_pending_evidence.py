"""The evidence of a promotion is committed by the drive's stop, and by the next drive's stop
when a kill came between the promotion and the commit: a promotion into the checked-out branch
that the committed ledger lacks is committed, once; one into another branch is not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from consort.core.layout import IGNORED
from consort.core.ledger import Actor, Ledger, ledger_path
from consort.core.ledger.events import DriveStopped, FeaturePromoted
from consort.core.project import Project
from consort.lanes.evidence import commit_pending_evidence, unrecorded_promotions


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@localhost", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_a_promotion_missing_from_the_committed_ledger_is_committed_once(tmp_path: Path) -> None:
    root = tmp_path / "app"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "consort.toml").write_text("")
    (root / ".gitignore").write_text("".join(f"{line}\n" for line in IGNORED))  # as init writes
    _git(root, "add", "consort.toml", ".gitignore")
    _git(root, "commit", "-qm", "first")
    project = Project(root)
    (project.state_dir / "features" / "F1-x").mkdir(parents=True)
    (project.state_dir / "features" / "F1-x" / "feature-spec.json").write_text("{}")
    ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
    ledger.record(
        FeaturePromoted(commit="c" * 40, into="main", run=None, deleted=[]),
        Actor.ORCHESTRATOR,
        "F1-x",
    )
    # killed here: the promotion is recorded, its evidence not committed

    assert unrecorded_promotions(project, ledger.read()) == ["F1-x"]
    ledger.record(DriveStopped(reason="done"), Actor.ORCHESTRATOR, "project")  # the next drive
    commit = commit_pending_evidence(project, ledger.read())
    assert commit is not None and _git(root, "rev-parse", "HEAD") == commit
    assert "Evidence of F1-x" in _git(root, "log", "-1", "--format=%s")
    committed = _git(root, "show", "HEAD:.consort/ledger.jsonl")
    assert committed == ledger_path(project.state_dir).read_text().rstrip("\n")
    assert _git(root, "status", "--porcelain", "--untracked-files=all") == ""

    ledger.record(DriveStopped(reason="done"), Actor.ORCHESTRATOR, "project")
    assert unrecorded_promotions(project, ledger.read()) == []
    assert commit_pending_evidence(project, ledger.read()) is None  # nothing promoted since

    ledger.record(
        FeaturePromoted(commit="d" * 40, into="dev", run=None, deleted=[]),
        Actor.ORCHESTRATOR,
        "F2-y",
    )
    assert unrecorded_promotions(project, ledger.read()) == []  # not into the checked-out one
