"""Typed artifacts: the models every role's output must satisfy, their JSON Schemas (shown to
agents by `consort schema NAME`), loading with clear errors, and the canonical hashing gate
approvals bind to.

Design choices worth knowing:
- Acceptance-criterion ids ("AC1", "AC2", ...) are unique within the whole feature, so a
  test-list item or a cycle can name one without its story.
- Layers are one fixed vocabulary (`Layer`): the spec author tags each criterion with one
  before the architecture exists, and the architect declares which of them the application has
  and which may import which.
- Test-list ids are positions: the n-th item is "Tn".
"""

from consort.core.artifacts._base import ArtifactModel
from consort.core.artifacts.architecture import (
    Architecture,
    CommandCheck,
    FitnessCheck,
    FitnessCheckKind,
    LayerRule,
    Nfr,
    PersistenceInvariant,
    TestCheck,
)
from consort.core.artifacts.build import (
    CyclePlan,
    ExpectedFailure,
    FailureKind,
    ReviewVerdict,
)
from consort.core.artifacts.canonical import (
    NotCanonicalJson,
    artifact_hash,
    canonical_json,
    read_json_file,
    sha256_canonical,
)
from consort.core.artifacts.crosscheck import (
    check_db_design_against_spec,
    check_test_list_against_spec,
    check_ux_against_spec,
)
from consort.core.artifacts.db_design import (
    CheckConstraint,
    Column,
    DbDesign,
    FkAction,
    ForeignKey,
    Index,
    StoryChange,
    Table,
    UniqueConstraint,
)
from consort.core.artifacts.feature_request import FeatureRequest
from consort.core.artifacts.registry import (
    MODELS,
    ArtifactKind,
    InvalidArtifact,
    condense,
    default_filename,
    json_schema,
    load_artifact,
    model_for,
    parse_kind,
    validate_data,
    validation_errors,
    write_artifact,
)
from consort.core.artifacts.spec import AcceptanceCriterion, FeatureSpec, Layer, Story
from consort.core.artifacts.test_list import TestItem, TestKind, TestList
from consort.core.artifacts.ux import Component, Page, PageState, UiState, UxDesign
from consort.core.vocabulary import Verdict

__all__ = [
    "MODELS",
    "AcceptanceCriterion",
    "Architecture",
    "ArtifactKind",
    "ArtifactModel",
    "CheckConstraint",
    "Column",
    "CommandCheck",
    "Component",
    "CyclePlan",
    "DbDesign",
    "ExpectedFailure",
    "FailureKind",
    "FeatureRequest",
    "FeatureSpec",
    "FitnessCheck",
    "FitnessCheckKind",
    "FkAction",
    "ForeignKey",
    "Index",
    "InvalidArtifact",
    "Layer",
    "LayerRule",
    "Nfr",
    "NotCanonicalJson",
    "Page",
    "PageState",
    "PersistenceInvariant",
    "ReviewVerdict",
    "Story",
    "StoryChange",
    "Table",
    "TestCheck",
    "TestItem",
    "TestKind",
    "TestList",
    "UiState",
    "UniqueConstraint",
    "UxDesign",
    "Verdict",
    "artifact_hash",
    "canonical_json",
    "check_db_design_against_spec",
    "check_test_list_against_spec",
    "check_ux_against_spec",
    "condense",
    "default_filename",
    "json_schema",
    "load_artifact",
    "model_for",
    "parse_kind",
    "read_json_file",
    "sha256_canonical",
    "validate_data",
    "validation_errors",
    "write_artifact",
]
