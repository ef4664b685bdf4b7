"""Every artifact kind: its model, its file name, its JSON Schema, and loading with clear errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar, overload

from pydantic import ValidationError

from consort.core.artifacts._base import ArtifactModel
from consort.core.artifacts.architecture import Architecture
from consort.core.artifacts.build import CyclePlan, ReviewVerdict
from consort.core.artifacts.canonical import JsonSyntaxProblem, parse_json_text
from consort.core.artifacts.db_design import DbDesign
from consort.core.artifacts.feature_request import FeatureRequest
from consort.core.artifacts.spec import FeatureSpec
from consort.core.artifacts.test_list import TestList
from consort.core.artifacts.ux import UxDesign
from consort.core.errors import ConsortError, UsageError
from consort.core.fsutil import atomic_write_json
from consort.core.vocabulary import ArtifactKind as ArtifactKind  # noqa: PLC0414 (its old home)

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

M = TypeVar("M", bound=ArtifactModel)


MODELS: dict[ArtifactKind, type[ArtifactModel]] = {
    ArtifactKind.FEATURE_REQUEST: FeatureRequest,
    ArtifactKind.FEATURE_SPEC: FeatureSpec,
    ArtifactKind.ARCHITECTURE: Architecture,
    ArtifactKind.DB_DESIGN: DbDesign,
    ArtifactKind.TEST_LIST: TestList,
    ArtifactKind.UX: UxDesign,
    ArtifactKind.REVIEW: ReviewVerdict,
    ArtifactKind.CYCLE_PLAN: CyclePlan,
}


class InvalidArtifact(ConsortError):
    """An artifact file that is missing, not JSON, or breaks a rule of its kind."""

    def __init__(self, kind: ArtifactKind, path: Path, problems: list[str]):
        self.kind = kind
        self.path = path
        self.problems = problems
        super().__init__(
            f"{path} is not a valid {kind} artifact: " + "; ".join(problems),
            fix=f"`consort schema {kind}` prints the schema it must follow",
        )


def model_for(kind: ArtifactKind) -> type[ArtifactModel]:
    return MODELS[kind]


def default_filename(kind: ArtifactKind) -> str:
    """The artifact's file name in its folder, e.g. "feature-spec.json"
    (features/<F>/ for design artifacts, a cycle's folder for review and cycle-plan)."""
    return f"{kind.value}.json"


def parse_kind(name: str) -> ArtifactKind:
    """The kind called `name`; a UsageError listing the valid names otherwise."""
    try:
        return ArtifactKind(name)
    except ValueError:
        valid = ", ".join(kind.value for kind in ArtifactKind)
        raise UsageError(f"unknown artifact kind {name!r}", fix=f"use one of: {valid}") from None


def json_schema(kind: ArtifactKind) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) an artifact of this kind must satisfy."""
    schema = MODELS[kind].model_json_schema()
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


@overload
def load_artifact(kind: Literal[ArtifactKind.FEATURE_REQUEST], path: Path) -> FeatureRequest: ...
@overload
def load_artifact(kind: Literal[ArtifactKind.FEATURE_SPEC], path: Path) -> FeatureSpec: ...
@overload
def load_artifact(kind: Literal[ArtifactKind.ARCHITECTURE], path: Path) -> Architecture: ...
@overload
def load_artifact(kind: Literal[ArtifactKind.DB_DESIGN], path: Path) -> DbDesign: ...
@overload
def load_artifact(kind: Literal[ArtifactKind.TEST_LIST], path: Path) -> TestList: ...
@overload
def load_artifact(kind: Literal[ArtifactKind.UX], path: Path) -> UxDesign: ...
@overload
def load_artifact(kind: Literal[ArtifactKind.REVIEW], path: Path) -> ReviewVerdict: ...
@overload
def load_artifact(kind: Literal[ArtifactKind.CYCLE_PLAN], path: Path) -> CyclePlan: ...
@overload
def load_artifact(kind: ArtifactKind, path: Path) -> ArtifactModel: ...
def load_artifact(kind: ArtifactKind, path: Path) -> ArtifactModel:
    """Read and validate an artifact file; InvalidArtifact names the file and every rule broken."""
    model, problems = _check(kind, path)
    if model is None:
        raise InvalidArtifact(kind, path, problems)
    return model


def validation_errors(kind: ArtifactKind, path: Path) -> list[str]:
    """The problems of an artifact file, one "location: rule" line each; empty when valid.

    Never raises for a bad file: the lines are meant as feedback for the agent that wrote it.
    """
    return _check(kind, path)[1]


def validate_data(kind: ArtifactKind, data: Any) -> tuple[ArtifactModel | None, list[str]]:
    """Validate already-parsed JSON data: the model, or None and the problems."""
    try:
        return MODELS[kind].model_validate(data), []
    except ValidationError as exc:
        return None, condense(exc)


def write_artifact(path: Path, artifact: ArtifactModel) -> None:
    """Write an artifact atomically as indented JSON (fields left at their defaults included)."""
    atomic_write_json(path, artifact.model_dump(mode="json"))


def condense(error: ValidationError) -> list[str]:
    """Pydantic's errors as "location: message" lines, e.g. "stories[0].acceptance_criteria:
    List should have at least 1 item after validation, not 0"."""
    return [f"{_location(err['loc'])}: {err['msg']}" for err in error.errors()]


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text or "(top level)"


def _check(kind: ArtifactKind, path: Path) -> tuple[ArtifactModel | None, list[str]]:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None, ["file not found"]
    except IsADirectoryError:
        return None, ["is a directory, not a file"]
    except UnicodeDecodeError as exc:
        return None, [f"not UTF-8 text: {exc.reason} at byte {exc.start}"]
    except OSError as exc:
        return None, [f"cannot be read: {exc.strerror}"]
    try:
        data = parse_json_text(text)
    except JsonSyntaxProblem as exc:
        return None, [str(exc)]
    return validate_data(kind, data)
