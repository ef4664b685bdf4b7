"""Each test-list item's cycle: RED, GREEN, review and REFACTOR, every step proven by Consort.

Every claim is Consort's own: RED and GREEN are test runs on a throwaway child of the story's
database; a driver's change to a protected path (tests, test configuration) is reverted and fails
the attempt; each proven step is a commit recorded in the ledger with its run's evidence. Before
every turn the story's worktree is reset to the last proven commit, so a crash at any moment
leaves nothing the next `drive` has to trust.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from consort.adapters.db.branching import Ephemeral
from consort.adapters.scope import glob_match
from consort.adapters.tdd.rules import green_problems, red_problems, vacuous_red_tests
from consort.adapters.tdd.runner import RunEvidence
from consort.adapters.vcs import Git, read_blobs, tree_entries
from consort.core.artifacts.build import CyclePlan, ReviewVerdict
from consort.core.artifacts.registry import (
    ArtifactKind,
    default_filename,
    load_artifact,
    validation_errors,
)
from consort.core.errors import ConsortError
from consort.core.fsutil import atomic_write_json, atomic_write_text
from consort.core.ledger.events import (
    GreenFailed,
    GreenVerified,
    RedFailed,
    RedVerified,
    RefactorFailed,
    RefactorVerified,
    ReviewRecorded,
)
from consort.core.machine import Action
from consort.core.state import ItemState, StoryState
from consort.lanes.build.context import STATE_GUARD, Build
from consort.lanes.build.evidence import (
    commit_worktree,
    cycle_record,
    record_failure,
    reset_worktree,
    run_tests,
)
from consort.lanes.build.turns import agent_turn, design_inputs, schema_input, turn_instructions
from consort.lanes.turn import Verdict, open_turn


def _red(ctx: Build, action: Action, story: StoryState, item: ItemState) -> None:
    if story.worktree is None or action.role is None or action.step is None:
        raise ConsortError(f"{story.key} has no worktree")
    worktree = Path(story.worktree)
    head = story.head or Git(worktree).out("rev-parse", "HEAD")
    reset_worktree(worktree, head)
    turn = open_turn(ctx.project, action.role, action.step)
    plan_path = turn.path / "outputs" / default_filename(ArtifactKind.CYCLE_PLAN)
    writable = tuple(ctx.project.config.build.protected)  # the navigator writes tests only
    inputs = {**design_inputs(ctx), "schema": schema_input(turn, ArtifactKind.CYCLE_PLAN)}
    text = (
        f"Write the failing test(s) for {item.id} into the working tree (test paths only: "
        f'{", ".join(writable)}), and the cycle plan as JSON to `outputs["cycle-plan"]`: the '
        "test files, the new tests' pytest node ids, and how they fail before the code exists."
    )
    done = agent_turn(
        ctx,
        action,
        story,
        item,
        turn,
        outputs={ArtifactKind.CYCLE_PLAN.value: plan_path},
        inputs=inputs,
        writable=writable,
        protected=(STATE_GUARD,),
        instructions=turn_instructions(ctx, action, item, text),
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
        commit = commit_worktree(worktree, f"RED {item.id}: {item.title}")
        if commit is None:
            problems.append("no test was written: the working tree is unchanged")
        else:
            evidence, report = run_tests(
                ctx,
                story,
                worktree,
                commit,
                f"red-{story.id}-{item.id}",
                baseline=head,
                tests_may_change=True,
                subject=ctx.subject(story, item),
                attempt=action.attempt,
            )
            problems += list(evidence.problems)
            if report is not None:
                problems += red_problems(plan, report, story.passing())
                problems += vacuous_red_tests(plan, _test_sources(worktree, commit, plan))
    if problems or plan is None or evidence is None:
        reset_worktree(worktree, head)
        record_failure(
            ctx,
            RedFailed,
            story,
            item,
            turn=done.name,
            action=action,
            problems=problems,
            evidence=evidence,
        )
        return
    verified = RedVerified(
        turn=done.name,
        commit=evidence.commit,
        plan=plan.model_dump(mode="json"),
        run=evidence.as_record(),
    )
    ctx.record(verified, ctx.subject(story, item))
    cycle_record(ctx, story, item, "red", verified.to_data())
    ctx.progress(f"  RED verified ({done.name}): {len(plan.test_ids)} new test(s) fail as declared")


def _test_sources(worktree: Path, commit: str, plan: CyclePlan) -> dict[str, str]:
    """The plan's test files as the RED commit holds them (git objects, not the checkout)."""
    entries = tree_entries(worktree, commit)
    wanted = {f: entries[f].sha for f in plan.test_files if f in entries}
    blobs = read_blobs(worktree, wanted.values())
    return {f: blobs[sha].decode("utf-8", errors="replace") for f, sha in wanted.items()}


@dataclass(frozen=True)
class DriverTurn:
    turn: str  # its name
    commit: str | None  # None: the driver changed nothing
    evidence: RunEvidence | None
    problems: list[str]


def driver_turn(
    ctx: Build,
    action: Action,
    story: StoryState,
    item: ItemState,
    *,
    base: str,
    text: str,
    stage: str,
    must_pass: tuple[str, ...],
    then: Callable[[Ephemeral, Path], None] | None = None,
) -> DriverTurn:
    """The driver's guarded turn from `base`: protected paths reverted (a failed attempt), the
    change committed, and the whole suite run, where every test in `must_pass` must pass.
    `then` runs on the run's migrated child after the tests (see `run_suite`)."""
    if story.worktree is None or action.role is None or action.step is None:
        raise ConsortError(f"{story.key} has no worktree")
    worktree = Path(story.worktree)
    reset_worktree(worktree, base)
    turn = open_turn(ctx.project, action.role, action.step, ctx.driver)
    done = agent_turn(
        ctx,
        action,
        story,
        item,
        turn,
        outputs={},
        inputs=design_inputs(ctx),
        writable=("**",),
        protected=ctx.protected,
        instructions=turn_instructions(ctx, action, item, text),
    )
    problems = list(done.problems)
    commit: str | None = None
    evidence: RunEvidence | None = None
    if not problems:
        commit = commit_worktree(worktree, f"{stage.upper()} {item.id}: {item.title}")
        if commit is not None:
            evidence, report = run_tests(
                ctx,
                story,
                worktree,
                commit,
                f"{stage}-{story.id}-{item.id}",
                baseline=base,
                then=then,
                subject=ctx.subject(story, item),
                attempt=action.attempt,
            )
            problems += list(evidence.problems)
            if report is not None:
                problems += green_problems(
                    report, evidence.exit_code or 0, must_pass, len(must_pass)
                )
    if problems:
        reset_worktree(worktree, base)
    return DriverTurn(done.name, commit, evidence, problems)


def _green(ctx: Build, action: Action, story: StoryState, item: ItemState) -> None:
    if item.red_commit is None:
        raise ConsortError(f"{item.id} has no RED commit")
    text = (
        f"Make the new test(s) of {item.id} pass with the least code. Tests and test "
        f"configuration ({', '.join(ctx.project.config.build.protected)}) cannot be changed: "
        "such a change is reverted and the attempt fails. The whole suite must pass."
    )
    done = driver_turn(
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
        record_failure(
            ctx,
            GreenFailed,
            story,
            item,
            turn=done.turn,
            action=action,
            problems=problems,
            evidence=done.evidence,
        )
        return
    green = GreenVerified(
        turn=done.turn,
        commit=done.evidence.commit,
        red_commit=item.red_commit,
        run=done.evidence.as_record(),
    )
    ctx.record(green, ctx.subject(story, item))
    cycle_record(ctx, story, item, "green", green.to_data())
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
    reset_worktree(worktree, item.green_commit)
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
    done = agent_turn(
        ctx,
        action,
        story,
        item,
        turn,
        outputs={ArtifactKind.REVIEW.value: review_path},
        inputs={
            **design_inputs(ctx),
            "diff": diff_path,
            "static-checks": smells_path,
            "schema": schema_input(turn, ArtifactKind.REVIEW),
        },
        writable=(),
        protected=ctx.protected,
        instructions=turn_instructions(ctx, action, item, text),
        # A verdict that does not validate fails the review turn itself (`turn.failed`).
        verdict=Verdict.TURN,
        check=lambda: [f"review: {p}" for p in validation_errors(ArtifactKind.REVIEW, review_path)],
    )
    if not done.ok:
        ctx.progress(f"  review failed ({done.name}): " + "; ".join(done.problems)[:300])
        return
    verdict: ReviewVerdict = load_artifact(ArtifactKind.REVIEW, review_path)
    review = ReviewRecorded(
        turn=done.name,
        verdict=verdict.verdict,
        reasons=list(verdict.reasons),
        smells=[s.as_data() for s in smells],
    )
    ctx.record(review, ctx.subject(story, item))
    cycle_record(ctx, story, item, "review", review.to_data())
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
    done = driver_turn(
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
        record_failure(
            ctx,
            RefactorFailed,
            story,
            item,
            turn=done.turn,
            action=action,
            problems=done.problems,
            evidence=done.evidence,
        )
        return
    refactor = RefactorVerified(
        turn=done.turn,
        commit=done.commit or item.green_commit,
        red_commit=item.red_commit,
        unchanged=done.commit is None,
        run=done.evidence.as_record() if done.evidence else None,
    )
    ctx.record(refactor, ctx.subject(story, item))
    cycle_record(ctx, story, item, "refactor", refactor.to_data())
    suffix = " (no change)" if done.commit is None else ""
    ctx.progress(f"  REFACTOR verified ({done.turn}){suffix}")


_CYCLE_STEPS: dict[str, Callable[[Build, Action, StoryState, ItemState], None]] = {
    "red": _red,
    "green": _green,
    "review": _review,
    "refactor": _refactor,
}


def perform_cycle_step(ctx: Build, action: Action, story: StoryState) -> None:
    """The turn the item's current stage asks for."""
    item = next((i for i in story.items if i.id == action.item), None)
    if item is None:
        raise ConsortError(f"no item {action.item!r} in story {story.key}")
    _CYCLE_STEPS[item.stage.value](ctx, action, story, item)
