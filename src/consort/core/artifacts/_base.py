"""The base model and the small vocabulary (ids, slugs, non-blank text) every artifact shares.

Artifacts are read by agents (through their JSON Schemas) as much as by Consort, so every field
carries a description, unknown keys are errors (a typo never silently disappears), booleans are
strict (`"false"` is not false), and cross-field rules report what is wrong and where.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Annotated, NoReturn

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints
from pydantic_core import PydanticCustomError


class ArtifactModel(BaseModel):
    """Base of every artifact model: closed (unknown keys rejected) and immutable once loaded."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank_text", "must not be blank")
    return value


# Free text an agent or a human writes: any characters, but never empty or only whitespace.
Text = Annotated[str, StringConstraints(min_length=1), AfterValidator(_not_blank)]

# Ids are a letter prefix and a number from 1, so they sort and read the same everywhere.
FEATURE_ID_PATTERN = r"^F[1-9][0-9]*$"
STORY_ID_PATTERN = r"^S[1-9][0-9]*$"
AC_ID_PATTERN = r"^AC[1-9][0-9]*$"
TEST_ITEM_ID_PATTERN = r"^T[1-9][0-9]*$"
NFR_ID_PATTERN = r"^NFR[1-9][0-9]*$"
INVARIANT_ID_PATTERN = r"^INV[1-9][0-9]*$"
SLUG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
# A PostgreSQL identifier Consort accepts: lower case, unquoted, within the 63-byte limit.
SQL_NAME_PATTERN = r"^[a-z_][a-z0-9_]{0,62}$"

FeatureId = Annotated[str, StringConstraints(pattern=FEATURE_ID_PATTERN)]
StoryId = Annotated[str, StringConstraints(pattern=STORY_ID_PATTERN)]
AcId = Annotated[str, StringConstraints(pattern=AC_ID_PATTERN)]
TestItemId = Annotated[str, StringConstraints(pattern=TEST_ITEM_ID_PATTERN)]
NfrId = Annotated[str, StringConstraints(pattern=NFR_ID_PATTERN)]
InvariantId = Annotated[str, StringConstraints(pattern=INVARIANT_ID_PATTERN)]
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, max_length=48)]
SqlName = Annotated[str, StringConstraints(pattern=SQL_NAME_PATTERN)]


def duplicates(values: Iterable[str]) -> list[str]:
    """Values that occur more than once, in first-seen order."""
    counts = Counter(values)
    return [value for value, count in counts.items() if count > 1]


def reject(problems: list[str]) -> None:
    """Fail validation with every problem found by one rule (a no-op when there are none)."""
    if problems:
        _fail("; ".join(problems))


def _fail(text: str) -> NoReturn:
    # The text goes in through the context so that braces in it (regexes, SQL) are not taken
    # for template placeholders.
    raise PydanticCustomError("artifact_rule", "{problems}", {"problems": text})
