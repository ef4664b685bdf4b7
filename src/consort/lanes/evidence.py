"""The evidence travels with the repository.

After a feature is promoted, Consort commits what `consort verify` needs to re-prove it on a
fresh clone with no `.consort` of its own: the ledger, the intake, the approved artifacts, the
cycle records, each accepted turn output and each run's JUnit report (and the record of what
`init` wrote for Claude Code). Runs' logs, turns' scratch, worktrees, the database's files and
the secret stay out (`.gitignore`).

The commit is made when the drive that promoted stops, after the ledger's last record of that
drive, so that the checkout is clean once it ends. A drive killed between the promotion and the
commit leaves the promotion missing from the committed ledger: the next drive's stop commits it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from consort.adapters.vcs import Git
from consort.core.layout import CLAUDE_MANIFEST_FILE, LEDGER_FILE, STATE_DIR
from consort.core.ledger import Event, EventType
from consort.core.ledger.events import FeaturePromoted
from consort.core.project import Project

EVIDENCE_FOLDERS = ("intake", "features", "cycles", "roles", "spikes")
EVIDENCE_GLOBS = ("runs/*/junit.xml", "turns/*/outputs/**/*")


def evidence_paths(project: Project) -> list[str]:
    state = project.state_dir
    found: list[Path] = [state / LEDGER_FILE, state / CLAUDE_MANIFEST_FILE]
    found += [state / name for name in EVIDENCE_FOLDERS if (state / name).is_dir()]
    for pattern in EVIDENCE_GLOBS:
        found += [p for p in state.glob(pattern) if p.is_file()]
    return sorted(str(p.relative_to(project.root)) for p in found if p.exists())


def commit_evidence(project: Project, message: str) -> str | None:
    """Commit the evidence files on the checked-out branch; the commit, or None when nothing
    changed. Forced past `.gitignore` (its `.consort/runs/` and `.consort/turns/` lines keep the
    logs and scratch out), with hooks off like every git call of Consort's."""
    git = Git(project.root)
    paths = evidence_paths(project)
    git.run("add", "-f", "--", *paths)
    staged = git.run("diff", "--cached", "--quiet", "--", *paths, check=False)
    if staged.ok:
        return None
    git.as_consort("commit", "-q", "--no-verify", "-m", message, "--", *paths)
    return git.out("rev-parse", "HEAD")


def unrecorded_promotions(project: Project, events: Sequence[Event]) -> list[str]:
    """The features promoted into the checked-out branch whose promotion its last commit's
    ledger does not hold yet (the ledger only grows: the committed one is a prefix)."""
    git = Git(project.root)
    branch = git.current_branch()
    committed = git.run("show", f"HEAD:{STATE_DIR}/{LEDGER_FILE}", check=False)
    known = committed.stdout.count("\n") if committed.ok else 0
    return [
        event.subject
        for event in events
        if event.seq > known
        and event.type is EventType.FEATURE_PROMOTED
        and FeaturePromoted.of(event).into == branch
    ]


def commit_pending_evidence(project: Project, events: Sequence[Event]) -> str | None:
    """Commit the evidence when a promotion into the checked-out branch is not committed yet:
    the commit, or None."""
    features = unrecorded_promotions(project, events)
    if not features:
        return None
    names = ", ".join(dict.fromkeys(features))
    return commit_evidence(project, f"Evidence of {names}: ledger, artifacts, runs")
