"""What the static checks report: a kind of smell, where it is, and a sentence for the reviewer."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SmellKind(StrEnum):
    PYTEST_IN_PRODUCTION = "pytest-in-production"
    EXIT_AT_IMPORT = "exit-at-import"
    TEST_WITHOUT_ASSERTION = "test-without-assertion"
    SKIP_MARKER_ADDED = "skip-marker-added"
    HARD_CODED_ANSWER = "hard-coded-answer"
    SWALLOWED_EXCEPTION = "swallowed-exception"


@dataclass(frozen=True)
class Smell:
    kind: SmellKind
    path: str  # relative to the top of the working tree, "/"-separated
    line: int  # 1-based
    detail: str

    def as_data(self) -> dict[str, object]:
        """The JSON-ready form that goes into the review's input and the ledger."""
        return {
            "kind": self.kind.value,
            "path": self.path,
            "line": self.line,
            "detail": self.detail,
        }

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind.value}: {self.detail}"
