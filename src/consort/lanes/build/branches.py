"""The build lane's paired branches: the feature branch, each story's branch and worktree
(with its own database), and a story's merge into the feature branch.
"""

from __future__ import annotations

from pathlib import Path

from consort.adapters.tdd.rules import green_problems
from consort.adapters.tdd.runner import migrate, run_suite
from consort.adapters.vcs import Git
from consort.core.errors import ConsortError
from consort.core.ledger.events import BranchCreated, StoryMerged
from consort.core.project import Project
from consort.core.state import StoryState
from consort.lanes.build.context import Build

FEATURE_CHECKOUT = "_feature"  # the feature branch's own checkout, beside its stories'


def _ensure_paired(ctx: Build, branch: str, parent: str) -> str:
    paired = ctx.paired
    names = paired.names(branch)
    if not (paired.git.branch_exists(branch) and paired.dbs.exists(names.database)):
        paired.create(branch, parent)
    return names.database


def ensure_worktree(project: Project, path: Path, branch: str) -> Path:
    git = Git(project.root)
    if (path / ".git").exists():
        return path
    git.run("worktree", "prune")
    path.parent.mkdir(parents=True, exist_ok=True)
    git.run("worktree", "add", "-q", str(path), branch)
    return path


def create_feature_branch(ctx: Build) -> None:
    git = Git(ctx.project.root)
    base = ctx.build.base_branch or git.current_branch()
    if base is None:
        raise ConsortError("HEAD is detached: check out the branch the feature builds on")
    database = _ensure_paired(ctx, ctx.build.feature_branch, base)
    ctx.record(
        BranchCreated(branch=ctx.build.feature_branch, database=database, base=base),
        ctx.feature.id,
    )
    ctx.progress(f"  created {ctx.build.feature_branch} from {base} (database {database})")


def create_story_branch(ctx: Build, story: StoryState) -> None:
    database = _ensure_paired(ctx, story.branch, ctx.build.feature_branch)
    worktree = ensure_worktree(
        ctx.project, ctx.project.layout.worktree(ctx.feature.id, story.key), story.branch
    )
    head = Git(worktree).out("rev-parse", "HEAD")
    evidence, _report = run_suite(
        ctx.project, ctx.paired.dbs, worktree, database, head, label=f"baseline-{story.id}"
    )
    ctx.record(
        BranchCreated(
            branch=story.branch,
            database=database,
            worktree=str(worktree),
            base_commit=head,
            run=evidence.as_record(),
        ),
        ctx.subject(story),
    )
    ctx.progress(
        f"  created {story.branch} (database {database}); baseline: "
        f"{len(evidence.passing)} passing test(s)"
    )


def merge_story(ctx: Build, story: StoryState) -> None:
    """Merge the accepted story into the feature branch; its migrations go to the feature's
    database only after they succeeded, with the whole suite, on a throwaway child of it."""
    checkout = ensure_worktree(
        ctx.project,
        ctx.project.layout.worktree(ctx.feature.id, FEATURE_CHECKOUT),
        ctx.build.feature_branch,
    )
    git = Git(checkout)
    git.run("reset", "-q", "--hard", "HEAD")
    git.as_consort(
        "merge",
        "-q",
        "--no-ff",
        "-m",
        f"Merge story {story.key}",
        story.branch,
    )
    commit = git.out("rev-parse", "HEAD")
    database = ctx.build.database or ctx.paired.names(ctx.build.feature_branch).database
    evidence, report = run_suite(
        ctx.project, ctx.paired.dbs, checkout, database, commit, label=f"merge-{story.id}"
    )
    problems = list(evidence.problems)
    if report is not None:
        problems += green_problems(report, evidence.exit_code or 0, story.passing(), 0)
    if problems:
        git.run("reset", "-q", "--hard", "HEAD~1")
        raise ConsortError(
            f"merging {story.key} into {ctx.build.feature_branch} does not hold: "
            + "; ".join(problems[:5])
        )
    migrate(
        ctx.project, checkout, ctx.paired.url(ctx.build.feature_branch), ctx.build.feature_branch
    )
    ctx.record(
        StoryMerged(commit=commit, into=ctx.build.feature_branch, run=evidence.as_record()),
        ctx.subject(story),
    )
    ctx.progress(f"  merged {story.key} into {ctx.build.feature_branch}; migrations applied")
