"""What a cycle's steps rest on: the worktree reset to a proven commit, a commit of exactly the
worktree, the suite run on it, and the record of each stage (ledger and cycle.json).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from consort.adapters.db.branching import Ephemeral
from consort.adapters.tdd.junit import JUnitReport
from consort.adapters.tdd.runner import RunEvidence, run_suite
from consort.adapters.vcs import Git, commit_bytes
from consort.core.errors import ConsortError
from consort.core.fsutil import atomic_write_json
from consort.core.ledger.events import StepFailed
from consort.core.machine import Action
from consort.core.state import ItemState, StoryState
from consort.lanes.build.context import Build
from consort.lanes.server_loss import recorded_restarts
from consort.lanes.turn import record_seal_violations, recorded_refusals


def reset_worktree(worktree: Path, commit: str) -> None:
    """Put the story's worktree back at the last proven commit, nothing else in it."""
    git = Git(worktree)
    git.run("reset", "-q", "--hard", commit)
    git.run("clean", "-q", "-fd")


def cycle_record(
    ctx: Build, story: StoryState, item: ItemState, stage: str, data: dict[str, Any]
) -> None:
    """`.consort/cycles/<F>/<S>/<T>/cycle.json`: each stage's latest evidence, for people."""
    path = ctx.project.layout.cycle_record(ctx.feature.id, story.key, item.id)
    current: dict[str, Any] = {}
    if path.is_file():
        current = json.loads(path.read_text(encoding="utf-8"))
    current.update(
        {"feature": ctx.feature.id, "story": story.key, "item": item.id, "title": item.title}
    )
    current.setdefault("stages", {})[stage] = data
    atomic_write_json(path, current)


def commit_worktree(worktree: Path, message: str) -> str | None:
    """Commit everything in the worktree; None when there was nothing to commit.

    Then remove every file the commit does not hold, git-ignored ones included, so the test run
    sees exactly the commit: a file hidden from git (a conftest.py behind a .gitignore entry)
    cannot change what the tests do.
    """
    commit = commit_bytes(worktree, message, allow_empty=False)
    Git(worktree).run("clean", "-q", "-ffdx")
    return commit


def run_tests(
    ctx: Build,
    story: StoryState,
    worktree: Path,
    commit: str,
    label: str,
    *,
    baseline: str | None = None,
    tests_may_change: bool = False,
    then: Callable[[Ephemeral, Path], None] | None = None,
    subject: str | None = None,
    attempt: int | None = None,
) -> tuple[RunEvidence, JUnitReport | None]:
    """The sealed run of `commit`, checked against `baseline` first (see `run_suite`); a run that
    lost the database server is repeated, recorded under `subject` (the story's by default)."""
    if story.database is None:
        raise ConsortError(f"story {story.key} has no database")
    return run_suite(
        ctx.project,
        ctx.paired.dbs,
        worktree,
        story.database,
        commit,
        label=label,
        baseline=baseline,
        tests_may_change=tests_may_change,
        then=then,
        on_server_lost=recorded_restarts(
            ctx.ledger,
            subject or ctx.subject(story),
            label,
            attempt=attempt,
            progress=ctx.progress,
        ),
    )


def record_failure(
    ctx: Build,
    kind: type[StepFailed],
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
    failed = kind(
        turn=turn,
        step=action.step,
        attempt=action.attempt,
        reasons=problems,
        feedback=feedback,
        run=evidence.as_record() if evidence else None,
        **({"refused": refused} if refused else {}),  # only when the guard refused something
    )
    ctx.record(failed, ctx.subject(story, item))
    if evidence is not None:
        record_seal_violations(
            ctx.ledger, ctx.subject(story, item), evidence.violations, turn=turn, run=evidence.run
        )
    name = kind.event_type.value
    cycle_record(ctx, story, item, f"{name}-{action.attempt}", {"reasons": problems, "turn": turn})
    ctx.progress(f"  {name} ({turn}): " + "; ".join(problems)[:300])
    for note in refused:
        ctx.progress(f"    {note[:300]}")
