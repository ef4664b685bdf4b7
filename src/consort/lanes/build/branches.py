"""The build lane's paired branches: the feature branch, each story's branch and worktree
(with its own database), and a story's merge into the feature branch.
"""

from __future__ import annotations

from pathlib import Path

from consort.adapters.tdd.rules import green_problems
from consort.adapters.tdd.runner import MigrationRefused, migrate, run_suite, schema_check
from consort.adapters.tdd.seal import merge_violations
from consort.adapters.vcs import Git, tree_entries
from consort.core.artifacts.registry import ArtifactKind
from consort.core.crashpoint import crash_point
from consort.core.derive import artifact_path
from consort.core.errors import ConsortError, ExitCode
from consort.core.ledger.events import BranchCreated, StoryMerged
from consort.core.project import Project
from consort.core.state import StoryState
from consort.lanes.build.context import Build
from consort.lanes.build.refs import require_recorded
from consort.lanes.server_loss import recorded_restarts
from consort.lanes.turn import record_seal_violations

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
    crash_point("worktree.add")
    git.run("worktree", "add", "-q", str(path), branch)
    return path


def create_feature_branch(ctx: Build) -> None:
    git = Git(ctx.project.root)
    base = ctx.build.base_branch or git.current_branch()
    if base is None:
        raise ConsortError("HEAD is detached: check out the branch the feature builds on")
    database = _ensure_paired(ctx, ctx.build.feature_branch, base)
    head = git.out("rev-parse", f"refs/heads/{ctx.build.feature_branch}")
    ctx.record(
        BranchCreated(branch=ctx.build.feature_branch, database=database, base=base, head=head),
        ctx.feature.id,
    )
    ctx.progress(f"  created {ctx.build.feature_branch} from {base} (database {database})")


def create_story_branch(ctx: Build, story: StoryState) -> None:
    database = _ensure_paired(ctx, story.branch, ctx.build.feature_branch)
    worktree = ensure_worktree(
        ctx.project, ctx.project.layout.worktree(ctx.feature.id, story.key), story.branch
    )
    head = Git(worktree).out("rev-parse", "HEAD")
    label = f"baseline-{story.id}"
    evidence, _report = run_suite(
        ctx.project,
        ctx.paired.dbs,
        worktree,
        database,
        head,
        label=label,
        on_server_lost=recorded_restarts(
            ctx.ledger, ctx.subject(story), label, progress=ctx.progress
        ),
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
    database only after they succeeded, with the whole suite, on a throwaway child of it.

    Both branches must still point where Consort left them (exit 4 otherwise); the merge may
    hold no protected file that neither side had, nor change the feature's applied migrations;
    and the migrated schema must hold what the approved db-design declares for the stories
    merged so far."""
    events = ctx.ledger.read()
    require_recorded(Git(ctx.project.root), story.branch, events)
    require_recorded(Git(ctx.project.root), ctx.build.feature_branch, events)
    checkout = ensure_worktree(
        ctx.project,
        ctx.project.layout.worktree(ctx.feature.id, FEATURE_CHECKOUT),
        ctx.build.feature_branch,
    )
    git = Git(checkout)
    git.run("reset", "-q", "--hard", "HEAD")
    target = git.out("rev-parse", "HEAD")
    git.as_consort(
        "merge",
        "-q",
        "--no-ff",
        "-m",
        f"Merge story {story.key}",
        story.branch,
    )
    commit = git.out("rev-parse", "HEAD")
    sealed = merge_violations(
        ctx.project.config,
        tree_entries(checkout, story.head or story.branch),
        tree_entries(checkout, target),
        tree_entries(checkout, commit),
    )
    database = ctx.build.database or ctx.paired.names(ctx.build.feature_branch).database
    done = {s.id for s in ctx.build.stories if s.merged} | {story.id}
    design = artifact_path(ctx.project.state_dir, ctx.feature.id, ArtifactKind.DB_DESIGN)
    check_schema, gaps = schema_check(ctx.project, ctx.paired.dbs, design, done)
    evidence, report = run_suite(
        ctx.project,
        ctx.paired.dbs,
        checkout,
        database,
        commit,
        label=f"merge-{story.id}",
        then=check_schema,
        on_server_lost=recorded_restarts(
            ctx.ledger, ctx.subject(story), f"merge-{story.id}", progress=ctx.progress
        ),
    )
    sealed += gaps
    problems = [str(v) for v in sealed] + list(evidence.problems)
    if report is not None:
        problems += green_problems(report, evidence.exit_code or 0, story.passing(), 0)
    if problems:
        git.run("reset", "-q", "--hard", target)
        record_seal_violations(
            ctx.ledger, ctx.subject(story), [*sealed, *evidence.violations], run=evidence.run
        )
        raise ConsortError(
            f"merging {story.key} into {ctx.build.feature_branch} does not hold: "
            + "; ".join(problems[:5]),
            code=ExitCode.INTEGRITY if sealed or evidence.violations else ExitCode.ERROR,
        )
    try:
        migrate(
            ctx.project,
            checkout,
            commit,
            ctx.paired.url(ctx.build.feature_branch),
            ctx.build.feature_branch,
            record_in=ctx.paired.dbs,
        )
    except MigrationRefused as refused:
        git.run("reset", "-q", "--hard", target)
        record_seal_violations(ctx.ledger, ctx.subject(story), refused.violations)
        raise
    ctx.record(
        StoryMerged(commit=commit, into=ctx.build.feature_branch, run=evidence.as_record()),
        ctx.subject(story),
    )
    ctx.progress(f"  merged {story.key} into {ctx.build.feature_branch}; migrations applied")
