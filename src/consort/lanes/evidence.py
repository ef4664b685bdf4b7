"""The evidence travels with the repository.

After a feature is promoted, Consort commits what `consort verify` needs to re-prove it on a
fresh clone with no `.consort` of its own: the ledger, the intake, the approved artifacts, the
cycle records, each accepted turn output and each run's JUnit report. Runs' logs, turns' scratch,
worktrees, the database's files and the secret stay out.
"""

from __future__ import annotations

from pathlib import Path

from consort.adapters.vcs import Git
from consort.core.project import Project

EVIDENCE_FOLDERS = ("intake", "features", "cycles", "roles")
EVIDENCE_GLOBS = ("runs/*/junit.xml", "turns/*/outputs/**/*")


def evidence_paths(project: Project) -> list[str]:
    state = project.state_dir
    found: list[Path] = [state / "ledger.jsonl"]
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
