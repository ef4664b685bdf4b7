"""Performing one build-lane action: a branch action, or a turn of a test-list item's cycle."""

from __future__ import annotations

from consort.core.errors import ConsortError
from consort.core.ledger import Ledger
from consort.core.machine import Action
from consort.core.project import Project
from consort.core.state import State
from consort.core.vocabulary import ActionKind
from consort.lanes.build.branches import create_feature_branch, create_story_branch, merge_story
from consort.lanes.build.context import Build, Progress
from consort.lanes.build.cycle import perform_cycle_step


def perform_build(
    project: Project, ledger: Ledger, state: State, action: Action, progress: Progress
) -> None:
    feature = state.feature(action.feature or "")
    if feature is None or feature.build is None:
        raise ConsortError(f"{action.describe()}: the feature has no build state")
    ctx = Build(project, ledger, state, feature, feature.build, progress)
    if action.kind is ActionKind.CREATE_FEATURE_BRANCH:
        create_feature_branch(ctx)
    elif action.kind is ActionKind.CREATE_STORY_BRANCH:
        create_story_branch(ctx, ctx.story(action.story))
    elif action.kind is ActionKind.MERGE_STORY:
        merge_story(ctx, ctx.story(action.story))
    elif action.kind is ActionKind.RUN_TURN:
        perform_cycle_step(ctx, action, ctx.story(action.story))
    elif action.kind is ActionKind.RUN_EXPERIMENT:
        from consort.lanes.experiments import run_marked  # it builds on this package

        run_marked(project, ledger, action, progress)
    else:
        raise ConsortError(f"not a build action: {action.describe()}")
