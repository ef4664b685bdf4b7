"""The feature spec: stories with testable acceptance criteria, written by the spec author."""

from __future__ import annotations

from collections.abc import Iterator
from enum import StrEnum

from pydantic import Field, field_validator

from consort.core.artifacts._base import (
    AcId,
    ArtifactModel,
    FeatureId,
    Slug,
    StoryId,
    Text,
    duplicates,
    reject,
)


class Layer(StrEnum):
    """Where in the application a behaviour lives and is tested.

    One fixed vocabulary for the whole design: the spec author tags each acceptance criterion
    with the layer that demonstrates it (the spec is written before the architecture exists, so
    it cannot refer to layer names the architect has yet to choose), and the architect declares
    which of these layers the application has and which may import which.
    """

    ROUTE = "route"  # HTTP endpoints: request parsing, status codes, response shapes
    SERVICE = "service"  # business rules, independent of HTTP and SQL
    REPOSITORY = "repository"  # queries and persistence
    MODEL = "model"  # data types and the ORM/table mapping
    MIGRATION = "migration"  # schema changes
    UI = "ui"  # pages, templates and components people see
    E2E = "e2e"  # a whole flow through the running application


class AcceptanceCriterion(ArtifactModel):
    """One testable behaviour, written as given / when / then."""

    id: AcId = Field(
        description='Id unique within the whole feature (not only the story): "AC" and a '
        'number, e.g. "AC3". Test-list items refer to it.'
    )
    given: Text = Field(description="The starting situation (data, state, who is acting).")
    when: Text = Field(description="The one action or event.")
    then: Text = Field(description="The observable outcome a test can assert.")
    layer: Layer = Field(description="The layer whose test demonstrates this behaviour.")


class Story(ArtifactModel):
    """A user story and its acceptance criteria. Each story is built on its own branch,
    named `<id>-<slug>`."""

    id: StoryId = Field(description='Story id: "S" and a number, e.g. "S1".')
    slug: Slug = Field(
        description='Short kebab-case name for folders and branches, e.g. "file-stock".'
    )
    title: Text = Field(description="A one-line title.")
    as_a: Text = Field(description='Who wants this ("As a ...").')
    i_want: Text = Field(description='What they want ("I want ...").')
    so_that: Text = Field(description='Why ("so that ...").')
    acceptance_criteria: list[AcceptanceCriterion] = Field(
        min_length=1, description="At least one acceptance criterion."
    )

    @property
    def key(self) -> str:
        """The story's folder and branch name, e.g. "S1-file-stock"."""
        return f"{self.id}-{self.slug}"


class FeatureSpec(ArtifactModel):
    """The structured, testable specification of one feature."""

    feature: FeatureId = Field(description='The feature id, e.g. "F1".')
    title: Text = Field(description="The feature's title.")
    summary: Text = Field(description="What the feature does and for whom, in a few sentences.")
    stories: list[Story] = Field(
        min_length=1, description="The stories, in the order they are to be built."
    )

    @field_validator("stories")
    @classmethod
    def _ids_are_unique(cls, stories: list[Story]) -> list[Story]:
        problems = [
            f"story id {sid} is used by more than one story"
            for sid in duplicates(s.id for s in stories)
        ]
        problems += [
            f"story slug {slug!r} is used by more than one story"
            for slug in duplicates(s.slug for s in stories)
        ]
        ac_ids = [ac.id for s in stories for ac in s.acceptance_criteria]
        problems += [
            f"acceptance criterion id {acid} is used more than once (ids are unique within the "
            "feature)"
            for acid in duplicates(ac_ids)
        ]
        reject(problems)
        return stories

    def story(self, story_id: str) -> Story | None:
        """The story with this id, if any."""
        return next((s for s in self.stories if s.id == story_id), None)

    def criteria(self) -> Iterator[tuple[Story, AcceptanceCriterion]]:
        """Every acceptance criterion with its story, in spec order."""
        for story in self.stories:
            for criterion in story.acceptance_criteria:
                yield story, criterion
