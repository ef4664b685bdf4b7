"""The deploy and promote lanes.

Deploy proves, on a throwaway child of the parent branch's database, that the feature's
migrations apply, that the whole suite passes there, and that the app starts against it and
answers over HTTP. Promote merges the feature into the parent branch and migrates the parent's
database — only after the same migrations succeeded on a fresh child of it — then runs the suite
on a fresh child of the promoted parent and deletes the feature's branches and databases.
"""

from __future__ import annotations

import contextlib
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from consort.adapters import proc
from consort.adapters.advance import advance_checkout, contains, merge_commit, move_branch
from consort.adapters.db.branching import Ephemeral
from consort.adapters.db.cluster import free_port
from consort.adapters.paired import PairedBranches
from consort.adapters.tdd.rules import green_problems
from consort.adapters.tdd.runbox import run_sandbox
from consort.adapters.tdd.runenv import command_env, workdir
from consort.adapters.tdd.runner import MigrationRefused, migrate, run_suite, schema_check
from consort.adapters.tdd.seal import merge_violations
from consort.adapters.vcs import Git, tree_entries
from consort.core.artifacts.registry import ArtifactKind, load_artifact
from consort.core.crashpoint import crash_point
from consort.core.derive import artifact_path
from consort.core.errors import ConsortError, ExitCode, UsageError
from consort.core.ledger import Actor, Event, EventType, Ledger
from consort.core.ledger.events import (
    DeployFailed,
    DeployVerified,
    FeaturePromoted,
    PromoteStep,
    PromoteStepName,
    SmokeProbe,
    StepOutcome,
)
from consort.core.machine import Action
from consort.core.project import Project
from consort.core.state import BuildState, FeatureState, State
from consort.core.vocabulary import ActionKind
from consort.lanes.build.branches import FEATURE_CHECKOUT, ensure_worktree
from consort.lanes.build.refs import require_recorded
from consort.lanes.server_loss import recorded_restarts
from consort.lanes.turn import record_seal_violations

Progress = Callable[[str], None]
POLL_S = 0.2


@dataclass(frozen=True)
class SmokeResult:
    path: str
    status: int | None  # None: no answer
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def perform_release(
    project: Project, ledger: Ledger, state: State, action: Action, progress: Progress
) -> None:
    feature = state.feature(action.feature or "")
    if feature is None or feature.build is None:
        raise ConsortError(f"{action.describe()}: the feature has no build state")
    if action.kind is ActionKind.DEPLOY:
        deploy(project, ledger, feature, feature.build, progress)
    elif action.kind is ActionKind.PROMOTE:
        promote(project, ledger, feature, feature.build, progress)
    else:
        raise ConsortError(f"not a release action: {action.describe()}")


def _base(build: BuildState) -> str:
    if build.base_branch is None:
        raise ConsortError(f"{build.feature_branch} does not record the branch it came from")
    return build.base_branch


def smoke_paths(project: Project, feature: FeatureState) -> list[str]:
    """The configured checks plus the feature's own pages that take no parameters."""
    paths = list(project.config.deploy.smoke)
    if feature.user_facing:
        ux = artifact_path(project.state_dir, feature.id, ArtifactKind.UX)
        with contextlib.suppress(ConsortError):
            for page in load_artifact(ArtifactKind.UX, ux).pages:
                if "{" not in page.route and page.route not in paths:
                    paths.append(page.route)
    return paths


def deploy(
    project: Project, ledger: Ledger, feature: FeatureState, build: BuildState, progress: Progress
) -> None:
    paired = PairedBranches(project)
    require_recorded(Git(project.root), build.feature_branch, ledger.read())
    checkout = ensure_worktree(
        project,
        project.layout.worktree(feature.id, FEATURE_CHECKOUT),
        build.feature_branch,
    )
    git = Git(checkout)
    git.run("reset", "-q", "--hard", build.feature_branch)
    commit = git.out("rev-parse", "HEAD")
    parent = paired.database_of(_base(build))
    smoke: list[SmokeResult] = []
    paths = smoke_paths(project, feature)

    design = artifact_path(project.state_dir, feature.id, ArtifactKind.DB_DESIGN)
    check_schema, gaps = schema_check(project, paired.dbs, design, None)

    def start_and_probe(child: Ephemeral, tree: Path) -> None:
        check_schema(child, tree)
        smoke.extend(run_app_and_probe(project, tree, child.url, paths))

    evidence, report = run_suite(
        project,
        paired.dbs,
        checkout,
        parent,
        commit,
        label=f"deploy-{feature.id.split('-')[0]}",
        then=start_and_probe,
        on_server_lost=recorded_restarts(ledger, feature.id, "deploy", progress=progress),
    )
    problems = [str(g) for g in gaps] + list(evidence.problems)
    if report is not None:
        problems += green_problems(report, evidence.exit_code or 0, (), 0)
    if not smoke and not problems:
        problems.append("the app was not started: [deploy] command is empty in consort.toml")
    problems += [
        f"GET {s.path} answered {s.status or 'nothing'} {s.detail}".strip()
        for s in smoke
        if not s.ok
    ]
    run = evidence.as_record()
    probes = [SmokeProbe(path=s.path, status=s.status) for s in smoke]
    if problems:
        failed = DeployFailed(
            commit=commit, parent_database=parent, run=run, smoke=probes, reasons=problems
        )
        ledger.record(failed, Actor.ORCHESTRATOR, feature.id)
        raise ConsortError(
            f"the deploy proof of {feature.id} does not hold: " + "; ".join(problems[:5]),
            fix="fix it on the feature branch (or send it back with `consort reject design`), "
            "then `consort drive`",
        )
    verified = DeployVerified(commit=commit, parent_database=parent, run=run, smoke=probes)
    ledger.record(verified, Actor.ORCHESTRATOR, feature.id)
    progress(
        f"  deploy proof holds: migrations, {len(evidence.passing)} tests and "
        + ", ".join(f"GET {s.path} {s.status}" for s in smoke)
    )


def run_app_and_probe(
    project: Project, checkout: Path, database_url: str, paths: list[str]
) -> list[SmokeResult]:
    """Start the app on 127.0.0.1 against `database_url`, GET each path, stop it."""
    template = project.config.deploy.command
    if not template:
        return []
    port = free_port()
    argv = [part.replace("{port}", str(port)) for part in template]
    log = checkout.parent / f"{checkout.name}-app-{port}.log"
    env = command_env(project.config.deploy, database_url)
    folder = workdir(checkout, project.config.deploy)
    # The app is code the agents wrote: it runs in the sandbox of every other run.
    box = run_sandbox(project)
    argv = box.wrap(argv, workdir=folder, env=env, writable=[checkout])
    # The app must outlive a request loop; it runs in a session of its own, stopped with
    # every process it started (uvicorn may fork workers).
    base = f"http://127.0.0.1:{port}"
    first = paths[0] if paths else "/"
    try:
        with proc.background(argv, cwd=folder, env=env, output=log, reap=not box.sandboxed) as app:
            if not _wait_until_up(base, first, app, project.config.deploy.startup_timeout):
                tail = log.read_text(encoding="utf-8", errors="replace")[-500:]
                return [SmokeResult(first, None, f"(the app did not start: {tail.strip()})")]
            return [_get(base, path) for path in paths]
    finally:
        log.unlink(missing_ok=True)


def _wait_until_up(base: str, path: str, app: proc.Background, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if app.poll() is not None:
            return False
        if _get(base, path).status is not None:
            return True
        time.sleep(POLL_S)
    return False


def _get(base: str, path: str) -> SmokeResult:
    try:
        with urllib.request.urlopen(base + path, timeout=5) as response:  # noqa: S310 -- loopback
            return SmokeResult(path, int(response.status))
    except urllib.error.HTTPError as exc:
        return SmokeResult(path, exc.code)
    except (urllib.error.URLError, OSError) as exc:
        return SmokeResult(path, None, str(exc))


def promote(
    project: Project, ledger: Ledger, feature: FeatureState, build: BuildState, progress: Progress
) -> None:
    """Merge, migrate, prove and clean up; every step that moves something resumable.

    The merge is recorded as begun (with its commit) before the parent branch moves, so the next
    drive after a crash can tell whether it took effect: `finished` when the branch holds it
    (the checkout is brought along, then migrate and the suite run again: both repeat safely),
    `undone` when it never reached the branch (merged again). The deletion of the feature's
    branches is recorded as begun with their names, and finished from wherever it stopped."""
    paired = PairedBranches(project)
    base = _base(build)
    git = Git(project.root)
    if git.current_branch() != base:
        raise UsageError(
            f"promoting {feature.id} merges into {base}, which is not checked out",
            fix=f"`consort branch switch {base}`, then `consort drive`",
        )
    promotion = _Promotion(project, ledger, paired, feature, build, base, progress)
    steps = _promote_steps(ledger.read(), feature.id)
    merge = _resumed_merge(promotion, steps)
    if merge is None:
        merge = _merge(promotion)
    head = git.out("rev-parse", "HEAD")
    # 3. migrate the parent itself (its migrations succeeded on a child of it first); a
    # migration a crash interrupted is run again: migrate commands apply what is not applied yet
    _migrate_parent(promotion, steps, head)
    # 4. the suite against a fresh child of the promoted parent
    evidence, report = run_suite(
        project,
        paired.dbs,
        project.root,
        paired.database_of(base),
        head,
        label=f"promote-{feature.id.split('-')[0]}",
        on_server_lost=recorded_restarts(ledger, feature.id, "promote", progress=progress),
    )
    problems = list(evidence.problems)
    if report is not None:
        problems += green_problems(report, evidence.exit_code or 0, (), 0)
    if problems:
        raise ConsortError(
            f"{base} after promoting {feature.id} does not pass: " + "; ".join(problems[:5]),
            fix=f"the merge is commit {merge[:10]}; fix {base}, then `consort drive`",
        )
    deleted = _delete_feature_branches(promotion, steps)
    ledger.record(
        FeaturePromoted(commit=merge, into=base, run=evidence.as_record(), deleted=deleted),
        Actor.ORCHESTRATOR,
        feature.id,
    )
    progress(
        f"  promoted {feature.id} into {base} ({merge[:10]}); removed {len(deleted)} branches;"
        " its evidence is committed when this drive stops"
    )


@dataclass(frozen=True)
class _Promotion:
    project: Project
    ledger: Ledger
    paired: PairedBranches
    feature: FeatureState
    build: BuildState
    base: str
    progress: Progress

    def record(self, step: PromoteStep) -> None:
        self.ledger.record(step, Actor.ORCHESTRATOR, self.feature.id)


@dataclass(frozen=True)
class _PromoteSteps:
    """The feature's promote steps in the ledger: the last begun of each, and whether a later
    record already said how it ended."""

    merge: PromoteStep | None
    merge_settled: bool
    deletion: PromoteStep | None
    deletion_settled: bool
    migration: PromoteStep | None = None
    migration_settled: bool = False


def _promote_steps(events: Sequence[Event], feature: str) -> _PromoteSteps:
    last: dict[PromoteStepName, PromoteStep] = {}
    settled: dict[PromoteStepName, bool] = {}
    for event in events:
        if event.type is not EventType.PROMOTE_STEP or event.subject != feature:
            continue
        step = PromoteStep.of(event)
        if step.outcome is StepOutcome.BEGUN:
            last[step.step] = step
            settled[step.step] = False
        else:
            settled[step.step] = True
    return _PromoteSteps(
        last.get(PromoteStepName.MERGE),
        settled.get(PromoteStepName.MERGE, False),
        last.get(PromoteStepName.DELETE_BRANCHES),
        settled.get(PromoteStepName.DELETE_BRANCHES, False),
        last.get(PromoteStepName.MIGRATE),
        settled.get(PromoteStepName.MIGRATE, False),
    )


def _migrate_parent(promotion: _Promotion, steps: _PromoteSteps, head: str) -> None:
    project, base = promotion.project, promotion.base
    resumed = steps.migration is not None and not steps.migration_settled
    if steps.migration is None:
        promotion.record(
            PromoteStep(
                step=PromoteStepName.MIGRATE, outcome=StepOutcome.BEGUN, into=base, commit=head
            )
        )
    crash_point("promote.migrate")
    try:
        migrate(
            project,
            project.root,
            head,
            promotion.paired.url(base),
            base,
            record_in=promotion.paired.dbs,
        )
    except MigrationRefused as refused:
        record_seal_violations(promotion.ledger, promotion.feature.id, refused.violations)
        raise
    if resumed:
        detail = f"the migration of {base} a crash interrupted was run again to its end"
        promotion.record(
            PromoteStep(
                step=PromoteStepName.MIGRATE,
                outcome=StepOutcome.FINISHED,
                into=base,
                commit=head,
                detail=detail,
            )
        )
        promotion.progress(f"  after a crash: {detail}")


def _resumed_merge(promotion: _Promotion, steps: _PromoteSteps) -> str | None:
    """The merge commit of a promote a crash interrupted after the parent branch moved (its
    checkout brought along), or None when there is none and the merge is (re)done."""
    begun = steps.merge
    if begun is None or begun.commit is None or begun.base_commit is None:
        return None
    git, base = Git(promotion.project.root), promotion.base
    head = git.out("rev-parse", "HEAD")
    if not contains(git, begun.commit, head):
        if not steps.merge_settled:
            detail = f"{base} never moved to {begun.commit[:10]}: merging again"
            _settle_merge(promotion, StepOutcome.UNDONE, begun.commit, detail)
        return None
    written = 0
    if head == begun.commit:
        written = advance_checkout(promotion.project.root, begun.base_commit, begun.commit)
    if not steps.merge_settled:
        detail = f"{base} holds the merge {begun.commit[:10]}" + (
            f"; {written} file(s) of its checkout written" if written else ""
        )
        _settle_merge(promotion, StepOutcome.FINISHED, begun.commit, detail)
    return begun.commit


def _settle_merge(promotion: _Promotion, outcome: StepOutcome, commit: str, detail: str) -> None:
    """Record what a resumed drive made of a merge a crash interrupted, and say it."""
    promotion.record(
        PromoteStep(
            step=PromoteStepName.MERGE,
            outcome=outcome,
            into=promotion.base,
            commit=commit,
            detail=detail,
        )
    )
    promotion.progress(
        f"  after a crash: the merge of {promotion.feature.id} is {outcome.value} ({detail})"
    )


def _merge(promotion: _Promotion) -> str:
    """Prove the migrations on a child of the parent, then merge: the merge commit."""
    project, ledger, paired = promotion.project, promotion.ledger, promotion.paired
    feature, build, base = promotion.feature, promotion.build, promotion.base
    git = Git(project.root)
    if not git.is_clean(ignoring=(".consort",)):
        raise UsageError(
            f"{base} has uncommitted changes: promoting would merge into them",
            fix="commit or stash them, then `consort drive`",
        )
    require_recorded(git, build.feature_branch, ledger.read())
    checkout = ensure_worktree(
        project,
        project.layout.worktree(feature.id, FEATURE_CHECKOUT),
        build.feature_branch,
    )
    Git(checkout).run("reset", "-q", "--hard", build.feature_branch)
    # 1. the migrations must succeed on a fresh child of the parent before they touch it
    feature_head = Git(checkout).out("rev-parse", "HEAD")
    with paired.dbs.ephemeral(paired.database_of(base)) as child:
        migrate(project, checkout, feature_head, child.url, f"a throwaway copy of {base}")
    # 2. the merge, made from objects and checked before the parent branch moves to it
    before = git.out("rev-parse", "HEAD")
    merged = merge_commit(git, before, feature_head, f"Promote {feature.id}: {feature.title}")
    sealed = merge_violations(
        project.config,
        tree_entries(project.root, feature_head),
        tree_entries(project.root, before),
        tree_entries(project.root, merged.commit),
    )
    if sealed:
        raise ConsortError(
            f"promoting {feature.id} into {base} does not hold: "
            + "; ".join(str(v) for v in sealed[:5]),
            code=ExitCode.INTEGRITY,
        )
    promotion.record(
        PromoteStep(
            step=PromoteStepName.MERGE,
            outcome=StepOutcome.BEGUN,
            into=base,
            commit=merged.commit,
            base_commit=before,
            feature_commit=feature_head,
        )
    )
    crash_point("promote.merge")
    move_branch(git, base, merged.commit, before, f"consort: promote {feature.id}")
    crash_point("promote.checkout")
    advance_checkout(project.root, before, merged.commit)
    return merged.commit


def _delete_feature_branches(promotion: _Promotion, steps: _PromoteSteps) -> list[str]:
    """Remove the feature's worktrees, branches and databases: the names of those removed. A
    deletion a crash interrupted is finished from where it stopped (each piece once)."""
    project, paired, build = promotion.project, promotion.paired, promotion.build
    git = Git(project.root)
    resumed = steps.deletion is not None and steps.deletion.branches is not None
    if steps.deletion is not None and steps.deletion.branches is not None:
        names = list(steps.deletion.branches)
    else:
        candidates = [s.branch for s in build.stories] + [build.feature_branch]
        names = [
            name
            for name in candidates
            if git.branch_exists(name) or paired.dbs.exists(paired.names(name).database)
        ]
        promotion.record(
            PromoteStep(
                step=PromoteStepName.DELETE_BRANCHES,
                outcome=StepOutcome.BEGUN,
                into=promotion.base,
                branches=names,
            )
        )
    folder = project.layout.worktrees / promotion.feature.id
    for worktree in sorted(folder.glob("*")) if folder.is_dir() else []:
        git.run("worktree", "remove", "--force", str(worktree), check=False)
    git.run("worktree", "prune")
    for number, name in enumerate(names):
        if git.branch_exists(name) or paired.dbs.exists(paired.names(name).database):
            paired.delete(name, force=True)
        if number == 0:
            crash_point("promote.delete")
    with contextlib.suppress(OSError):
        folder.rmdir()
    if resumed and not steps.deletion_settled:
        promotion.record(
            PromoteStep(
                step=PromoteStepName.DELETE_BRANCHES,
                outcome=StepOutcome.FINISHED,
                into=promotion.base,
                branches=names,
                detail="the deletion a crash interrupted was completed",
            )
        )
        promotion.progress(
            f"  after a crash: the deletion of {promotion.feature.id}'s branches is finished"
        )
    return names
