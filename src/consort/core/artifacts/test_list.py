"""The test list: the ordered master list of tests drawn from the acceptance criteria. Written
by the test strategist; the build lane runs one item per cycle, in order."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, field_validator

from consort.core.artifacts._base import (
    AcId,
    ArtifactModel,
    FeatureId,
    StoryId,
    TestItemId,
    Text,
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


class TestList(ArtifactModel):
    """The ordered list of tests for one feature. Items are numbered T1..Tn in build order."""

    __test__ = False

    feature: FeatureId = Field(description='The feature id, e.g. "F1".')
    items: list[TestItem] = Field(
        min_length=1, description="The tests, in the order to build them."
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

    def item(self, item_id: str) -> TestItem | None:
        """The item with this id, if any."""
        return next((i for i in self.items if i.id == item_id), None)

    def for_story(self, story_id: str) -> list[TestItem]:
        """The story's items, in list order."""
        return [i for i in self.items if i.story == story_id]
