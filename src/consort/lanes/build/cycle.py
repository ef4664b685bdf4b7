"""Performing the build lane: paired branches per story, and each test-list item's cycle.

Every claim is Consort's own: RED and GREEN are test runs on a throwaway child of the story's
database; a driver's change to a protected path (tests, test configuration) is reverted and fails
the attempt; each proven step is a commit recorded in the ledger with its run's evidence. Before
every turn the story's worktree is reset to the last proven commit, so a crash at any moment
leaves nothing the next `drive` has to trust.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consort.core.artifacts.build import CyclePlan, ReviewVerdict
from consort.core.artifacts.registry import (
    ArtifactKind,
    default_filename,
    json_schema,
    load_artifact,
    validation_errors,
)
from consort.adapters.paired import PairedBranches
from consort.core.derive import artifact_path
from consort.core.errors import ConsortError
from consort.core.fsutil import atomic_write_json, atomic_write_text
from consort.core.ledger import Actor, EventType, Ledger
from consort.core.machine import Action
from consort.core.vocabulary import ActionKind
from consort.core.project import Project
from consort.roles import prompt_for
from consort.adapters.scope import glob_match
from consort.core.state import BuildState, FeatureState, ItemState, State, StoryState
from consort.adapters.tdd.junit import JUnitReport
from consort.adapters.tdd.rules import green_problems, red_problems
from consort.adapters.tdd.runner import RunEvidence, migrate, run_suite
from consort.lanes.turn import (
    OpenTurn,
    TurnRequest,
    TurnRun,
    Verdict,
    open_turn,
    recorded_refusals,
    run_turn,
)
from consort.adapters.vcs import Git

WORKTREES_DIR = "worktrees"
CYCLES_DIR = "cycles"
STATE_GUARD = ".consort/**"
FEATURE_CHECKOUT = "_feature"

Progress = Callable[[str], None]


@dataclass
class Build:
    """What one build action needs: the project, its ledger, and where in the build it is."""

    project: Project
    ledger: Ledger
    state: State
    feature: FeatureState
    build: BuildState
    progress: Progress

    @property
    def paired(self) -> PairedBranches:
        return PairedBranches(self.project)

    def story(self, key: str | None) -> StoryState:
        found = next((s for s in self.build.stories if s.key == key), None)
        if found is None:
            raise ConsortError(f"no story {key!r} in {self.feature.id}")
        return found

    def subject(self, story: StoryState, item: ItemState | None = None) -> str:
        parts = [self.feature.id, story.key] + ([item.id] if item else [])
        return "/".join(parts)

    def append(self, kind: EventType, subject: str, data: dict[str, Any]) -> None:
        self.ledger.append(kind, Actor.ORCHESTRATOR, subject, data)

    @property
    def protected(self) -> tuple[str, ...]:
        return (*self.project.config.build.protected, STATE_GUARD)


def perform_build(
    project: Project, ledger: Ledger, state: State, action: Action, progress: Progress
) -> None:
    feature = state.feature(action.feature or "")
    if feature is None or feature.build is None:
        raise ConsortError(f"{action.describe()}: the feature has no build state")
    ctx = Build(project, ledger, state, feature, feature.build, progress)
    if action.kind is ActionKind.CREATE_FEATURE_BRANCH:
        _create_feature_branch(ctx)
    elif action.kind is ActionKind.CREATE_STORY_BRANCH:
        _create_story_branch(ctx, ctx.story(action.story))
    elif action.kind is ActionKind.MERGE_STORY:
        _merge_story(ctx, ctx.story(action.story))
    elif action.kind is ActionKind.RUN_TURN:
        story = ctx.story(action.story)
        item = next((i for i in story.items if i.id == action.item), None)
        if item is None:
            raise ConsortError(f"no item {action.item!r} in story {story.key}")
        _CYCLE_STEPS[item.stage.value](ctx, action, story, item)
    else:
        raise ConsortError(f"not a build action: {action.describe()}")


# ---- branches ----------------------------------------------------------------------------


def _worktree_path(project: Project, feature: str, story_key: str) -> Path:
    return project.state_dir / WORKTREES_DIR / feature / story_key


def _ensure_paired(ctx: Build, branch: str, parent: str) -> str:
    paired = ctx.paired
    names = paired.names(branch)
    if not (paired.git.branch_exists(branch) and paired.dbs.exists(names.database)):
        paired.create(branch, parent)
    return names.database


def _ensure_worktree(project: Project, path: Path, branch: str) -> Path:
    git = Git(project.root)
    if (path / ".git").exists():
        return path
    git.run("worktree", "prune")
    path.parent.mkdir(parents=True, exist_ok=True)
    git.run("worktree", "add", "-q", str(path), branch)
    return path


def _create_feature_branch(ctx: Build) -> None:
    git = Git(ctx.project.root)
    base = ctx.build.base_branch or git.current_branch()
    if base is None:
        raise ConsortError("HEAD is detached: check out the branch the feature builds on")
    database = _ensure_paired(ctx, ctx.build.feature_branch, base)
    ctx.append(
        EventType.BRANCH_CREATED,
        ctx.feature.id,
        {"branch": ctx.build.feature_branch, "database": database, "base": base},
    )
    ctx.progress(f"  created {ctx.build.feature_branch} from {base} (database {database})")


def _create_story_branch(ctx: Build, story: StoryState) -> None:
    database = _ensure_paired(ctx, story.branch, ctx.build.feature_branch)
    worktree = _ensure_worktree(
        ctx.project, _worktree_path(ctx.project, ctx.feature.id, story.key), story.branch
    )
    head = Git(worktree).out("rev-parse", "HEAD")
    evidence, _report = run_suite(
        ctx.project, ctx.paired.dbs, worktree, database, head, label=f"baseline-{story.id}"
    )
    ctx.append(
        EventType.BRANCH_CREATED,
        ctx.subject(story),
        {
            "branch": story.branch,
            "database": database,
            "worktree": str(worktree),
            "base_commit": head,
            "run": evidence.as_data(),
        },
    )
    ctx.progress(
        f"  created {story.branch} (database {database}); baseline: "
        f"{len(evidence.passing)} passing test(s)"
    )


def _merge_story(ctx: Build, story: StoryState) -> None:
    """Merge the accepted story into the feature branch; its migrations go to the feature's
    database only after they succeeded, with the whole suite, on a throwaway child of it."""
    checkout = _ensure_worktree(
        ctx.project,
        _worktree_path(ctx.project, ctx.feature.id, FEATURE_CHECKOUT),
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
    ctx.append(
        EventType.STORY_MERGED,
        ctx.subject(story),
        {"commit": commit, "into": ctx.build.feature_branch, "run": evidence.as_data()},
    )
    ctx.progress(f"  merged {story.key} into {ctx.build.feature_branch}; migrations applied")


# ---- one cycle -----------------------------------------------------------------------------


def _reset(worktree: Path, commit: str) -> None:
    """Put the story's worktree back at the last proven commit, nothing else in it."""
    git = Git(worktree)
    git.run("reset", "-q", "--hard", commit)
    git.run("clean", "-q", "-fd")


def _agent_turn(
    ctx: Build,
    action: Action,
    story: StoryState,
    item: ItemState,
    turn: OpenTurn,
    *,
    outputs: dict[str, Path],
    inputs: dict[str, Path],
    writable: Sequence[str],
    protected: Sequence[str],
    instructions: str,
    verdict: Verdict = Verdict.STEP,
    check: Callable[[], Sequence[str]] | None = None,
) -> TurnRun:
    """A build turn in the story's worktree, with the story's own branch database."""
    if story.worktree is None:
        raise ConsortError(f"not a build turn: {action.describe()}")
    request = TurnRequest(
        subject=ctx.subject(story, item),
        feature=ctx.feature.id,
        story=story.key,
        item=item.id,
        attempt=action.attempt,
        feedback=action.feedback,
        instructions=instructions,
        inputs=inputs,
        outputs=outputs,
        workdir=Path(story.worktree),
        writable=tuple(writable),
        protected=tuple(protected),
        database_url=ctx.paired.url(story.branch),  # its own branch database, never the parent's
    )
    return run_turn(ctx.project, ctx.ledger, turn, request, verdict=verdict, check=check)


def _design_inputs(ctx: Build) -> dict[str, Path]:
    inputs = {}
    for step in ctx.feature.steps():
        inputs[step.artifact.value] = artifact_path(
            ctx.project.state_dir, ctx.feature.id, step.artifact
        )
    return inputs


def _instructions(ctx: Build, action: Action, item: ItemState, task_text: str) -> str:
    if action.role is None:
        raise ConsortError(f"not a turn: {action.describe()}")
    tests = load_artifact(
        ArtifactKind.TEST_LIST,
        artifact_path(ctx.project.state_dir, ctx.feature.id, ArtifactKind.TEST_LIST),
    )
    entry = tests.item(item.id)
    about = (
        f"Test-list item {item.id} (story {entry.story}, {entry.ac}, {entry.kind.value}): "
        f"{entry.title}\n\n{entry.description}\n"
        if entry
        else ""
    )
    return (
        prompt_for(action.role, ctx.project).rstrip()
        + "\n\n## This turn\n\n"
        + about
        + "\n"
        + task_text
        + "\n"
    )


def _schema_input(turn: OpenTurn, kind: ArtifactKind) -> Path:
    path = turn.path / f"{kind.value}.schema.json"
    atomic_write_text(path, json.dumps(json_schema(kind), indent=2) + "\n")
    return path


def _cycle_record(
    ctx: Build, story: StoryState, item: ItemState, stage: str, data: dict[str, Any]
) -> None:
    """`.consort/cycles/<F>/<S>/<T>/cycle.json`: each stage's latest evidence, for people."""
    path = ctx.project.state_dir / CYCLES_DIR / ctx.feature.id / story.key / item.id / "cycle.json"
    current: dict[str, Any] = {}
    if path.is_file():
        current = json.loads(path.read_text(encoding="utf-8"))
    current.update(
        {"feature": ctx.feature.id, "story": story.key, "item": item.id, "title": item.title}
    )
    current.setdefault("stages", {})[stage] = data
    atomic_write_json(path, current)


def _commit(worktree: Path, message: str) -> str | None:
    """Commit everything in the worktree; None when there was nothing to commit.

    Then remove every file the commit does not hold, git-ignored ones included, so the test run
    sees exactly the commit: a file hidden from git (a conftest.py behind a .gitignore entry)
    cannot change what the tests do.
    """
    git = Git(worktree)
    commit = git.commit_all(message) if git.out("status", "--porcelain") else None
    git.run("clean", "-q", "-ffdx")
    return commit


def _run(
    ctx: Build, story: StoryState, worktree: Path, commit: str, label: str
) -> tuple[RunEvidence, JUnitReport | None]:
    if story.database is None:
        raise ConsortError(f"story {story.key} has no database")
    return run_suite(ctx.project, ctx.paired.dbs, worktree, story.database, commit, label=label)


def _fail(
    ctx: Build,
    kind: EventType,
    story: StoryState,
    item: ItemState,
    *,
    turn: str,
    action: Action,
    problems: list[str],
    evidence: RunEvidence | None,
) -> None:
    # Calls the guard refused do not fail an attempt, but often explain why it failed.
    refused = recorded_refusals(ctx.project, turn)
    feedback = "\n".join([*problems, *refused])
    if evidence is not None and evidence.output_tail:
        feedback += "\n\nTest output (tail):\n" + evidence.output_tail
    data = {
        "turn": turn,
        "step": action.step.value if action.step else None,
        "attempt": action.attempt,
        "reasons": problems,
        "feedback": feedback,
        "run": evidence.as_data() if evidence else None,
    }
    if refused:
        data["refused"] = refused
    ctx.append(kind, ctx.subject(story, item), data)
    _cycle_record(
        ctx, story, item, f"{kind.value}-{action.attempt}", {"reasons": problems, "turn": turn}
    )
    ctx.progress(f"  {kind.value} ({turn}): " + "; ".join(problems)[:300])
    for note in refused:
        ctx.progress(f"    {note[:300]}")


def _red(ctx: Build, action: Action, story: StoryState, item: ItemState) -> None:
    if story.worktree is None or action.role is None or action.step is None:
        raise ConsortError(f"{story.key} has no worktree")
    worktree = Path(story.worktree)
    head = story.head or Git(worktree).out("rev-parse", "HEAD")
    _reset(worktree, head)
    turn = open_turn(ctx.project, action.role, action.step)
    plan_path = turn.path / "outputs" / default_filename(ArtifactKind.CYCLE_PLAN)
    writable = tuple(ctx.project.config.build.protected)  # the navigator writes tests only
    inputs = {**_design_inputs(ctx), "schema": _schema_input(turn, ArtifactKind.CYCLE_PLAN)}
    text = (
        f"Write the failing test(s) for {item.id} into the working tree (test paths only: "
        f'{", ".join(writable)}), and the cycle plan as JSON to `outputs["cycle-plan"]`: the '
        "test files, the new tests' pytest node ids, and how they fail before the code exists."
    )
    done = _agent_turn(
        ctx,
        action,
        story,
        item,
        turn,
        outputs={ArtifactKind.CYCLE_PLAN.value: plan_path},
        inputs=inputs,
        writable=writable,
        protected=(STATE_GUARD,),
        instructions=_instructions(ctx, action, item, text),
    )
    problems = list(done.problems)
    problems += [f"cycle-plan: {p}" for p in validation_errors(ArtifactKind.CYCLE_PLAN, plan_path)]
    plan: CyclePlan | None = None
    if not problems:
        plan = load_artifact(ArtifactKind.CYCLE_PLAN, plan_path)
        problems += [
            f"cycle-plan: {f} is not a test path ({', '.join(writable)})"
            for f in plan.test_files
            if not any(glob_match(g, f) for g in writable)
        ]
    evidence: RunEvidence | None = None
    if not problems and plan is not None:
        commit = _commit(worktree, f"RED {item.id}: {item.title}")
        if commit is None:
            problems.append("no test was written: the working tree is unchanged")
        else:
            evidence, report = _run(ctx, story, worktree, commit, f"red-{story.id}-{item.id}")
            problems += list(evidence.problems)
            if report is not None:
                problems += red_problems(plan, report, story.passing())
    if problems or plan is None or evidence is None:
        _reset(worktree, head)
        _fail(
            ctx,
            EventType.RED_FAILED,
            story,
            item,
            turn=done.name,
            action=action,
            problems=problems,
            evidence=evidence,
        )
        return
    data = {
        "turn": done.name,
        "commit": evidence.commit,
        "plan": plan.model_dump(mode="json"),
        "run": evidence.as_data(),
    }
    ctx.append(EventType.RED_VERIFIED, ctx.subject(story, item), data)
    _cycle_record(ctx, story, item, "red", data)
    ctx.progress(
        f"  RED verified ({done.name}): {len(plan.test_ids)} new test(s) fail as declared"
    )


@dataclass(frozen=True)
class _DriverTurn:
    turn: str  # its name
    commit: str | None  # None: the driver changed nothing
    evidence: RunEvidence | None
    problems: list[str]


def _driver_turn(
    ctx: Build,
    action: Action,
    story: StoryState,
    item: ItemState,
    *,
    base: str,
    text: str,
    stage: str,
    must_pass: tuple[str, ...],
) -> _DriverTurn:
    """The driver's guarded turn from `base`: protected paths reverted (a failed attempt), the
    change committed, and the whole suite run, where every test in `must_pass` must pass."""
    if story.worktree is None or action.role is None or action.step is None:
        raise ConsortError(f"{story.key} has no worktree")
    worktree = Path(story.worktree)
    _reset(worktree, base)
    turn = open_turn(ctx.project, action.role, action.step)
    done = _agent_turn(
        ctx,
        action,
        story,
        item,
        turn,
        outputs={},
        inputs=_design_inputs(ctx),
        writable=("**",),
        protected=ctx.protected,
        instructions=_instructions(ctx, action, item, text),
    )
    problems = list(done.problems)
    commit: str | None = None
    evidence: RunEvidence | None = None
    if not problems:
        commit = _commit(worktree, f"{stage.upper()} {item.id}: {item.title}")
        if commit is not None:
            evidence, report = _run(ctx, story, worktree, commit, f"{stage}-{story.id}-{item.id}")
            problems += list(evidence.problems)
            if report is not None:
                problems += green_problems(
                    report, evidence.exit_code or 0, must_pass, len(must_pass)
                )
    if problems:
        _reset(worktree, base)
    return _DriverTurn(done.name, commit, evidence, problems)


def _green(ctx: Build, action: Action, story: StoryState, item: ItemState) -> None:
    if item.red_commit is None:
        raise ConsortError(f"{item.id} has no RED commit")
    text = (
        f"Make the new test(s) of {item.id} pass with the least code. Tests and test "
        f"configuration ({', '.join(ctx.project.config.build.protected)}) cannot be changed: "
        "such a change is reverted and the attempt fails. The whole suite must pass."
    )
    done = _driver_turn(
        ctx,
        action,
        story,
        item,
        base=item.red_commit,
        text=text,
        stage="green",
        must_pass=item.red_tests,
    )
    problems = done.problems if done.commit or done.problems else ["no code was changed"]
    if problems or done.evidence is None:
        _fail(
            ctx,
            EventType.GREEN_FAILED,
            story,
            item,
            turn=done.turn,
            action=action,
            problems=problems,
            evidence=done.evidence,
        )
        return
    data = {
        "turn": done.turn,
        "commit": done.evidence.commit,
        "red_commit": item.red_commit,
        "run": done.evidence.as_data(),
    }
    ctx.append(EventType.GREEN_VERIFIED, ctx.subject(story, item), data)
    _cycle_record(ctx, story, item, "green", data)
    ctx.progress(f"  GREEN verified ({done.turn}): {len(done.evidence.passing)} tests pass")


def _review(ctx: Build, action: Action, story: StoryState, item: ItemState) -> None:
    from consort.adapters.smells import find_smells

    if (
        story.worktree is None
        or item.red_commit is None
        or item.green_commit is None
        or action.role is None
        or action.step is None
    ):
        raise ConsortError(f"{item.id} has no GREEN commit to review")
    worktree = Path(story.worktree)
    _reset(worktree, item.green_commit)
    turn = open_turn(ctx.project, action.role, action.step)
    smells = find_smells(
        worktree, item.red_commit, item.green_commit, ctx.project.config.build.protected
    )
    diff_path = turn.path / "change.diff"
    atomic_write_text(
        diff_path, Git(worktree).run("diff", item.red_commit, item.green_commit).stdout
    )
    smells_path = turn.path / "static-checks.json"
    atomic_write_json(smells_path, [s.as_data() for s in smells])
    review_path = turn.path / "outputs" / default_filename(ArtifactKind.REVIEW)
    text = (
        'Review the change that made the test pass (`inputs["diff"]`) with the static checks\' '
        'findings (`inputs["static-checks"]`). Write your verdict as JSON to '
        '`outputs["review"]`: approve, or refactor with the reasons. Change no file.'
    )
    done = _agent_turn(
        ctx,
        action,
        story,
        item,
        turn,
        outputs={ArtifactKind.REVIEW.value: review_path},
        inputs={
            **_design_inputs(ctx),
            "diff": diff_path,
            "static-checks": smells_path,
            "schema": _schema_input(turn, ArtifactKind.REVIEW),
        },
        writable=(),
        protected=ctx.protected,
        instructions=_instructions(ctx, action, item, text),
        # A verdict that does not validate fails the review turn itself (`turn.failed`).
        verdict=Verdict.TURN,
        check=lambda: [
            f"review: {p}" for p in validation_errors(ArtifactKind.REVIEW, review_path)
        ],
    )
    if not done.ok:
        ctx.progress(f"  review failed ({done.name}): " + "; ".join(done.problems)[:300])
        return
    verdict: ReviewVerdict = load_artifact(ArtifactKind.REVIEW, review_path)
    data = {
        "turn": done.name,
        "verdict": verdict.verdict.value,
        "reasons": list(verdict.reasons),
        "smells": [s.as_data() for s in smells],
    }
    ctx.append(EventType.REVIEW_RECORDED, ctx.subject(story, item), data)
    _cycle_record(ctx, story, item, "review", data)
    ctx.progress(
        f"  review ({done.name}): {verdict.verdict.value}"
        + (f" — {'; '.join(verdict.reasons)}" if verdict.reasons else "")
        + (f"; static checks: {len(smells)} finding(s)" if smells else "")
    )


def _refactor(ctx: Build, action: Action, story: StoryState, item: ItemState) -> None:
    if item.green_commit is None:
        raise ConsortError(f"{item.id} has no GREEN commit to refactor")
    text = (
        "Refactor as the review asks (see the feedback). Behaviour stays the same: the whole "
        "suite must still pass, and tests cannot be changed."
    )
    done = _driver_turn(
        ctx,
        action,
        story,
        item,
        base=item.green_commit,
        text=text,
        stage="refactor",
        must_pass=item.passing,
    )
    if done.problems:
        _fail(
            ctx,
            EventType.REFACTOR_FAILED,
            story,
            item,
            turn=done.turn,
            action=action,
            problems=done.problems,
            evidence=done.evidence,
        )
        return
    data = {
        "turn": done.turn,
        "commit": done.commit or item.green_commit,
        "red_commit": item.red_commit,
        "unchanged": done.commit is None,
        "run": done.evidence.as_data() if done.evidence else None,
    }
    ctx.append(EventType.REFACTOR_VERIFIED, ctx.subject(story, item), data)
    _cycle_record(ctx, story, item, "refactor", data)
    suffix = " (no change)" if done.commit is None else ""
    ctx.progress(f"  REFACTOR verified ({done.turn}){suffix}")


_CYCLE_STEPS: dict[str, Callable[[Build, Action, StoryState, ItemState], None]] = {
    "red": _red,
    "green": _green,
    "review": _review,
    "refactor": _refactor,
}
