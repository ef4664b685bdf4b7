"""Static checks run before the navigator reviews a TDD cycle; their smells go into the review's
input and the ledger. They flag what review should look at, they do not fail the cycle."""

from consort.adapters.smells.changes import added_skip_markers, expected_values, hard_coded_answers
from consort.adapters.smells.checks import check_source
from consort.adapters.smells.find import find_smells, is_test_path
from consort.adapters.smells.model import Smell, SmellKind

__all__ = [
    "Smell",
    "SmellKind",
    "added_skip_markers",
    "check_source",
    "expected_values",
    "find_smells",
    "hard_coded_answers",
    "is_test_path",
]
