"""The test list: the ordered master list of tests drawn from the acceptance criteria. Written
by the test strategist; the build lane runs one item per cycle, in order."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, field_validator, model_validator

from consort.core.artifacts._base import (
    AcId,
    ArtifactModel,
    FeatureId,
    StoryId,
    TestItemId,
    Text,
    duplicates,
    reject,
)


class TestKind(StrEnum):
    """What kind of test an item is."""

    __test__ = False  # not a pytest test class, despite its name

    BEHAVIOUR = "behaviour"  # proves an acceptance criterion's behaviour
    FITNESS = "fitness"  # proves a structural or non-functional property (layering, NFRs)
    E2E = "e2e"  # drives a whole flow through the running application


class TestItem(ArtifactModel):
    """One test to write, tied to the acceptance criterion it demonstrates."""

    __test__ = False

    id: TestItemId = Field(
        description='Position in the list: "T1" for the first item, "T2" for the second, ...'
    )
    story: StoryId = Field(description='The story the test belongs to, e.g. "S1".')
    ac: AcId = Field(description='The acceptance criterion it demonstrates, e.g. "AC2".')
    kind: TestKind = Field(description="behaviour, fitness or e2e.")
    title: Text = Field(description="A one-line title that says what the test proves.")
    description: Text = Field(
        description="What the test sets up, does and asserts, in a few sentences."
    )


MIN_APPROACHES = 2
MAX_APPROACHES = 8


class ExperimentMark(ArtifactModel):
    """A story the design asks to be built by several approaches: at each marked cycle's GREEN,
    `consort drive` races them against the same RED tests and stops for a person to select one."""

    story: StoryId = Field(description='The story to race, e.g. "S1".')
    approaches: int = Field(
        ge=MIN_APPROACHES,
        le=MAX_APPROACHES,
        description="How many approaches race each marked cycle's GREEN (2 to 8); their drivers "
        "are [experiment.approaches.NAME] in consort.toml, in order, then the plain driver.",
    )
    items: list[TestItemId] = Field(
        default_factory=list,
        description='The story\'s cycles to race, e.g. ["T1"]; empty: every cycle of the story.',
    )


class TestList(ArtifactModel):
    """The ordered list of tests for one feature. Items are numbered T1..Tn in build order."""

    __test__ = False

    feature: FeatureId = Field(description='The feature id, e.g. "F1".')
    items: list[TestItem] = Field(
        min_length=1, description="The tests, in the order to build them."
    )
    experiments: list[ExperimentMark] = Field(
        default_factory=list,
        description="Stories to build by several approaches raced side by side, for a person to "
        "pick one (leave it empty unless the design asks for that).",
    )

    @field_validator("items")
    @classmethod
    def _numbered_in_order(cls, items: list[TestItem]) -> list[TestItem]:
        reject(
            [
                f"items[{index}] has id {item.id}, expected T{index + 1} (ids are T1, T2, ... "
                "in list order)"
                for index, item in enumerate(items)
                if item.id != f"T{index + 1}"
            ]
        )
        return items

    @field_validator("experiments")
    @classmethod
    def _one_mark_per_story(cls, marks: list[ExperimentMark]) -> list[ExperimentMark]:
        reject(
            [
                f"story {story} is marked for an experiment more than once"
                for story in duplicates(m.story for m in marks)
            ]
        )
        return marks

    @model_validator(mode="after")
    def _marked_items_are_the_storys(self) -> TestList:
        owner = {item.id: item.story for item in self.items}
        reject(
            [
                f"experiments: {item_id} is not an item of story {mark.story}"
                for mark in self.experiments
                for item_id in mark.items
                if owner.get(item_id) != mark.story
            ]
            + [
                f"experiments: story {mark.story} has no test-list item"
                for mark in self.experiments
                if mark.story not in owner.values()
            ]
        )
        return self

    def raced(self, story_id: str) -> tuple[int, tuple[str, ...]] | None:
        """(approaches, the cycles to race) for a story the design marks; None otherwise."""
        mark = next((m for m in self.experiments if m.story == story_id), None)
        if mark is None:
            return None
        items = mark.items or [i.id for i in self.for_story(story_id)]
        return mark.approaches, tuple(items)

    def item(self, item_id: str) -> TestItem | None:
        """The item with this id, if any."""
        return next((i for i in self.items if i.id == item_id), None)

    def for_story(self, story_id: str) -> list[TestItem]:
        """The story's items, in list order."""
        return [i for i in self.items if i.story == story_id]
