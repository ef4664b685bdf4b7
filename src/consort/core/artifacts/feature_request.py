"""The product owner's feature request: the human's words, recorded at intake."""

from __future__ import annotations

from pydantic import AwareDatetime, Field, StrictBool

from consort.core.artifacts._base import ArtifactModel, FeatureId, Slug, Text


class FeatureRequest(ArtifactModel):
    """A feature as the product owner asked for it. Consort records it at intake; the spec
    author turns it into a feature spec. The feature's folder is named `<id>-<slug>`."""

    id: FeatureId = Field(description='The feature id: "F" and a number, e.g. "F1".')
    slug: Slug = Field(
        description="Short kebab-case name used in folder and branch names, "
        'e.g. "stock-visibility".'
    )
    title: Text = Field(description="A one-line title for the feature.")
    text: Text = Field(
        description="The product owner's request in their own words (markdown), unedited."
    )
    user_facing: StrictBool = Field(
        description="True when people use the feature through a user interface; only then does "
        "the design lane include a UX design."
    )
    created: AwareDatetime = Field(
        description="When the request was recorded (ISO 8601 with a time zone)."
    )

    @property
    def key(self) -> str:
        """The feature's folder and branch name, e.g. "F1-stock-visibility"."""
        return f"{self.id}-{self.slug}"
