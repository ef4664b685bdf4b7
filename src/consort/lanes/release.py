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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from consort.adapters import proc
from consort.adapters.db.branching import Ephemeral
from consort.adapters.db.cluster import free_port
from consort.adapters.paired import PairedBranches
from consort.adapters.tdd.rules import green_problems
from consort.adapters.tdd.runbox import run_sandbox
from consort.adapters.tdd.runenv import command_env, workdir
from consort.adapters.tdd.runner import migrate, run_suite, schema_check
from consort.adapters.tdd.seal import merge_violations
from consort.adapters.vcs import Git, tree_entries
from consort.core.artifacts.registry import ArtifactKind, load_artifact
from consort.core.derive import artifact_path
from consort.core.errors import ConsortError, ExitCode, UsageError
from consort.core.ledger import Actor, Ledger
from consort.core.ledger.events import DeployFailed, DeployVerified, FeaturePromoted, SmokeProbe
from consort.core.machine import Action
from consort.core.project import Project
from consort.core.state import BuildState, FeatureState, State
from consort.core.vocabulary import ActionKind
from consort.lanes.build.branches import FEATURE_CHECKOUT, ensure_worktree
from consort.lanes.build.refs import require_recorded

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
    argv = run_sandbox(project).wrap(argv, workdir=folder, env=env, writable=[checkout])
    # The app must outlive a request loop; it runs in a session of its own, stopped with
    # every process it started (uvicorn may fork workers).
    base = f"http://127.0.0.1:{port}"
    first = paths[0] if paths else "/"
    try:
        with proc.background(argv, cwd=folder, env=env, output=log) as app:
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
    paired = PairedBranches(project)
    base = _base(build)
    git = Git(project.root)
    if git.current_branch() != base:
        raise UsageError(
            f"promoting {feature.id} merges into {base}, which is not checked out",
            fix=f"`consort branch switch {base}`, then `consort drive`",
        )
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
    parent = paired.database_of(base)
    # 1. the migrations must succeed on a fresh child of the parent before they touch it
    feature_head = Git(checkout).out("rev-parse", "HEAD")
    with paired.dbs.ephemeral(parent) as child:
        migrate(project, checkout, feature_head, child.url, f"a throwaway copy of {base}")
    # 2. merge, 3. migrate the parent itself
    before_merge = git.out("rev-parse", "HEAD")
    git.as_consort(
        "merge",
        "-q",
        "--no-ff",
        "-m",
        f"Promote {feature.id}: {feature.title}",
        build.feature_branch,
    )
    commit = git.out("rev-parse", "HEAD")
    sealed = merge_violations(
        project.config,
        tree_entries(project.root, feature_head),
        tree_entries(project.root, before_merge),
        tree_entries(project.root, commit),
    )
    if sealed:
        git.run("reset", "-q", "--hard", before_merge)
        raise ConsortError(
            f"promoting {feature.id} into {base} does not hold: "
            + "; ".join(str(v) for v in sealed[:5]),
            code=ExitCode.INTEGRITY,
        )
    migrate(project, project.root, commit, paired.url(base), base)
    # 4. the suite against a fresh child of the promoted parent
    evidence, report = run_suite(
        project,
        paired.dbs,
        project.root,
        parent,
        commit,
        label=f"promote-{feature.id.split('-')[0]}",
    )
    problems = list(evidence.problems)
    if report is not None:
        problems += green_problems(report, evidence.exit_code or 0, (), 0)
    if problems:
        raise ConsortError(
            f"{base} after promoting {feature.id} does not pass: " + "; ".join(problems[:5]),
            fix=f"the merge is commit {commit[:10]}; fix {base}, then `consort drive`",
        )
    deleted = _delete_feature_branches(project, paired, feature, build)
    ledger.record(
        FeaturePromoted(commit=commit, into=base, run=evidence.as_record(), deleted=deleted),
        Actor.ORCHESTRATOR,
        feature.id,
    )
    progress(
        f"  promoted {feature.id} into {base} ({commit[:10]}); removed {len(deleted)} branches;"
        " its evidence is committed when this drive stops"
    )


def _delete_feature_branches(
    project: Project, paired: PairedBranches, feature: FeatureState, build: BuildState
) -> list[str]:
    git = Git(project.root)
    names = [s.branch for s in build.stories] + [build.feature_branch]
    folder = project.layout.worktrees / feature.id
    for worktree in sorted(folder.glob("*")) if folder.is_dir() else []:
        git.run("worktree", "remove", "--force", str(worktree), check=False)
    git.run("worktree", "prune")
    deleted = []
    for name in names:
        if git.branch_exists(name) or paired.dbs.exists(paired.names(name).database):
            paired.delete(name, force=True)
            deleted.append(name)
    with contextlib.suppress(OSError):
        folder.rmdir()
    return deleted
