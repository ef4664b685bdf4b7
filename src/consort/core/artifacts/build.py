"""Artifacts of the build lane: the navigator's cycle plan and its review verdict."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from consort.core.artifacts._base import ArtifactModel, Text, duplicates, reject
from consort.core.vocabulary import Verdict


class ReviewVerdict(ArtifactModel):
    """The navigator's review of the code that made the cycle's test pass."""

    verdict: Verdict = Field(description='"approve", or "refactor" when the code must improve.')
    reasons: list[Text] = Field(
        default_factory=list,
        description="Why: for refactor, each thing to change (at least one); for approve, "
        "optional notes.",
    )

    @model_validator(mode="after")
    def _refactor_has_reasons(self) -> ReviewVerdict:
        if self.verdict is Verdict.REFACTOR and not self.reasons:
            reject(["reasons: a refactor verdict needs at least one reason"])
        return self


class FailureKind(StrEnum):
    """How the new test is expected to fail before the code exists."""

    ASSERTION = "assertion"  # the test runs and an assertion fails
    ERROR = "error"  # the test errors: an exception, e.g. an import of code not written yet


def _relative_posix_path(value: str) -> str:
    path = PurePosixPath(value)
    if not value or value != value.strip() or "\\" in value:
        raise PydanticCustomError("bad_path", "must be a relative path with / separators")
    if path.is_absolute() or ".." in path.parts:
        raise PydanticCustomError("bad_path", "must be relative to the project root, without '..'")
    return value


def _compiles(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise PydanticCustomError(
            "bad_regex", "is not a valid regular expression: {reason}", {"reason": str(exc)}
        ) from exc
    return value


ProjectPath = Annotated[str, AfterValidator(_relative_posix_path)]
Regex = Annotated[str, AfterValidator(_compiles)]


class ExpectedFailure(ArtifactModel):
    """How the new tests must fail at RED, so that a failure for another reason is caught."""

    kind: FailureKind = Field(description='"assertion" or "error".')
    message_pattern: Regex = Field(
        description="A Python regular expression searched for (re.search) in each new test's "
        'failure message, e.g. "assert 404 == 201" or "ModuleNotFoundError".'
    )


class CyclePlan(ArtifactModel):
    """The navigator's plan for one test-list item: the tests it will add and how they fail."""

    test_files: list[ProjectPath] = Field(
        min_length=1,
        description="The test files the navigator will add or extend, relative to the project "
        'root, e.g. ["tests/test_stock_records.py"].',
    )
    test_ids: list[Text] = Field(
        min_length=1,
        description="The new tests as pytest node ids, each in one of test_files, e.g. "
        '"tests/test_stock_records.py::test_filing_stock_records_the_quantity".',
    )
    expected_failure: ExpectedFailure = Field(description="How the new tests fail at RED.")

    @field_validator("test_files", "test_ids")
    @classmethod
    def _no_repeats(cls, values: list[str]) -> list[str]:
        reject([f"{v} is listed twice" for v in duplicates(values)])
        return values

    @model_validator(mode="after")
    def _ids_are_in_declared_files(self) -> CyclePlan:
        files = set(self.test_files)
        reject(
            [
                f"test_ids[{index}]: {test_id} is not in one of test_files"
                for index, test_id in enumerate(self.test_ids)
                if test_id.split("::", 1)[0] not in files
            ]
        )
        return self
