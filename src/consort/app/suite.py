"""`consort test [BRANCH]`: the suite run the way Consort runs it, for a person.

The branch's commit (not the working tree: uncommitted changes are not part of it) is checked
out into a temporary folder, migrated and tested on a throwaway child of the branch's database,
which is dropped afterwards; the JUnit report is judged by the rules GREEN uses (every test
collected and passing, no module that fails to import, the command's own exit code). A plain
`python -m pytest` in a checkout would instead write into the branch's own database.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consort.core.errors import UsageError
from consort.core.project import Project


@dataclass(frozen=True)
class SuiteOutcome:
    branch: str
    commit: str
    database: str  # the branch database the throwaway child was made from
    run: str  # the run folder under .consort/runs/
    counts: dict[str, int]
    problems: tuple[str, ...]  # empty when the suite passes by Consort's rules

    @property
    def passed(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        return {
            "branch": self.branch,
            "commit": self.commit,
            "database": self.database,
            "run": self.run,
            "counts": self.counts,
            "problems": list(self.problems),
            "passed": self.passed,
        }


def run_tests(project: Project, branch: str | None = None) -> SuiteOutcome:
    """Run the suite at `branch`'s commit (default: the checked-out branch) on a throwaway
    child of its database."""
    from consort.adapters import proc
    from consort.adapters.paired import PairedBranches
    from consort.adapters.tdd.rules import green_problems
    from consort.adapters.tdd.runner import run_suite
    from consort.adapters.vcs import Git

    git = Git(project.root)
    name = branch or git.current_branch()
    if name is None:
        raise UsageError("HEAD is detached: say which branch to test", fix="consort test BRANCH")
    if not git.branch_exists(name):
        raise UsageError(f"no branch {name!r}", fix="see `consort branch list`")
    paired = PairedBranches(project)
    database = paired.database_of(name)
    commit = git.out("rev-parse", name)
    # Owned children: after a kill -9, the next drive (or branch gc) finds what the run left.
    with (
        proc.owning_children(project.state_dir),
        tempfile.TemporaryDirectory(prefix="consort-test-") as folder,
    ):
        tree = Path(folder) / "tree"
        git.run("worktree", "add", "-q", "--detach", str(tree), commit)
        try:
            evidence, report = run_suite(
                project, paired.dbs, tree, database, commit, label="test-" + _label(name)
            )
        finally:
            git.run("worktree", "remove", "--force", str(tree), check=False)
            git.run("worktree", "prune", check=False)
    problems = list(evidence.problems)
    if report is not None:
        problems += green_problems(report, evidence.exit_code or 0, (), 0)
    return SuiteOutcome(name, commit, database, evidence.run, evidence.counts, tuple(problems))


def _label(branch: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in branch)[:40]
