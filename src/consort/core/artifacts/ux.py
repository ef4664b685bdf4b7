"""The UX design: pages, their components and the states each page can be in. Written by the
UX designer, for user-facing features only."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from consort.core.artifacts._base import ArtifactModel, FeatureId, StoryId, Text, duplicates, reject


class UiState(StrEnum):
    """A state a page can be in; each needs its own design."""

    LOADING = "loading"  # data on its way
    EMPTY = "empty"  # nothing to show yet
    READY = "ready"  # the normal view with data
    ERROR = "error"  # something failed; what the user can do about it
    SUBMITTING = "submitting"  # a form was sent and awaits its answer
    SUCCESS = "success"  # a change was saved
    NOT_FOUND = "not-found"  # the addressed item does not exist


# A route path such as "/skus/{sku}": starts with "/", no spaces.
Route = Annotated[str, StringConstraints(pattern=r"^/[^\s]*$")]


class Component(ArtifactModel):
    """A part of a page."""

    name: Text = Field(description='Component name, e.g. "StockTable".')
    description: Text = Field(description="What it shows or does, and how the user interacts.")


class PageState(ArtifactModel):
    """What the page shows in one state."""

    state: UiState = Field(description="The state.")
    description: Text = Field(description="What the user sees and can do in this state.")


class Page(ArtifactModel):
    """One page (screen) of the interface."""

    name: Text = Field(description='Page name, e.g. "Stock by location".')
    route: Route = Field(description='The URL path, e.g. "/locations/{code}/stock".')
    stories: list[StoryId] = Field(
        default_factory=list, description='The stories this page serves, e.g. ["S2"].'
    )
    components: list[Component] = Field(min_length=1, description="The page's components.")
    states: list[PageState] = Field(
        min_length=1,
        description='The states the page can be in; "ready" is required, and every state the '
        "page can reach (loading, empty, error, ...) should be listed.",
    )

    @field_validator("states")
    @classmethod
    def _ready_state_once_each(cls, states: list[PageState]) -> list[PageState]:
        problems = [
            f"state {s} is listed more than once" for s in duplicates(s.state for s in states)
        ]
        if UiState.READY not in {s.state for s in states}:
            problems.append('the "ready" state is missing')
        reject(problems)
        return states

    @field_validator("components")
    @classmethod
    def _component_names_unique(cls, components: list[Component]) -> list[Component]:
        reject(
            [
                f"component {n} is listed more than once"
                for n in duplicates(c.name for c in components)
            ]
        )
        return components


class UxDesign(ArtifactModel):
    """The interface design of a user-facing feature."""

    feature: FeatureId = Field(description='The feature id, e.g. "F1".')
    pages: list[Page] = Field(min_length=1, description="The pages the feature adds or changes.")

    @field_validator("pages")
    @classmethod
    def _names_and_routes_unique(cls, pages: list[Page]) -> list[Page]:
        problems = [
            f"page name {n!r} is used more than once" for n in duplicates(p.name for p in pages)
        ]
        problems += [
            f"route {r} is used by more than one page" for r in duplicates(p.route for p in pages)
        ]
        reject(problems)
        return pages
