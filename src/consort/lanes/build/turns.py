"""A build turn: the guarded turn (`lanes.turn`) in the story's worktree, with the story's own
branch database, and what the agent is told and given to read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from consort.core.artifacts.registry import ArtifactKind, json_schema, load_artifact
from consort.core.derive import artifact_path
from consort.core.errors import ConsortError
from consort.core.fsutil import atomic_write_text
from consort.core.machine import Action
from consort.core.spikes import spike_notes_inputs
from consort.core.state import ItemState, StoryState
from consort.lanes.build.context import Build
from consort.lanes.turn import OpenTurn, TurnRequest, TurnRun, Verdict, run_turn
from consort.roles import prompt_for


def agent_turn(
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
        # Never the branch database itself: a scratch child of it, with its own role, made for
        # the turn and dropped after it. Only Consort migrates the branch database.
        scratch_of=story.database,
        shared=ctx.shared,
    )
    return run_turn(ctx.project, ctx.ledger, turn, request, verdict=verdict, check=check)


def design_inputs(ctx: Build) -> dict[str, Path]:
    """The feature's design artifacts, and the notes its ended spikes kept (`spike-<NAME>`)."""
    inputs = {}
    for step in ctx.feature.steps():
        inputs[step.artifact.value] = artifact_path(
            ctx.project.state_dir, ctx.feature.id, step.artifact
        )
    inputs.update(spike_notes_inputs(ctx.ledger.read(), ctx.feature.id, ctx.project.root))
    return inputs


def turn_instructions(ctx: Build, action: Action, item: ItemState, task_text: str) -> str:
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


def schema_input(turn: OpenTurn, kind: ArtifactKind) -> Path:
    path = turn.path / f"{kind.value}.schema.json"
    atomic_write_text(path, json.dumps(json_schema(kind), indent=2) + "\n")
    return path
