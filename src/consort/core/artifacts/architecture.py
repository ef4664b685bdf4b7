"""The architecture: layers and their allowed imports, NFRs with fitness checks, and the
persistence invariants. Written by the architect."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, field_validator

from consort.core.artifacts._base import (
    ArtifactModel,
    FeatureId,
    InvariantId,
    NfrId,
    Text,
    duplicates,
    reject,
)
from consort.core.artifacts.spec import Layer


class LayerRule(ArtifactModel):
    """One layer of the application and the layers its code may import."""

    name: Layer = Field(description="The layer (one of the fixed layer names).")
    description: Text = Field(description="What belongs in this layer and what does not.")
    allowed_imports: list[Layer] = Field(
        default_factory=list,
        description="The other layers this layer's code may import; each must be declared in "
        "`layers`. Anything not listed is forbidden.",
    )
    paths: list[Text] = Field(
        default_factory=list,
        description='Glob patterns of the source files in this layer, e.g. "app/routes/**"; '
        "used to check imports. Empty: not checked by path.",
    )


class FitnessCheckKind(StrEnum):
    """How a fitness check runs: a command of its own, or a test in the suite."""

    COMMAND = "command"
    TEST = "test"


class CommandCheck(ArtifactModel):
    """A fitness check run as a command; it passes when the command exits 0."""

    kind: Literal[FitnessCheckKind.COMMAND] = Field(description='Always "command".')
    argv: list[Text] = Field(
        min_length=1,
        description='The command as an argument list (no shell), e.g. ["python", "-m", '
        '"pytest", "tests/fitness"].',
    )


class TestCheck(ArtifactModel):
    """A fitness check done by a test in the project's suite."""

    __test__ = False  # not a pytest test class, despite its name

    kind: Literal[FitnessCheckKind.TEST] = Field(description='Always "test".')
    test: Text = Field(
        description="The test that checks it, as a pytest node id, e.g. "
        '"tests/fitness/test_layers.py::test_routes_do_not_import_repositories".'
    )


FitnessCheck = Annotated[CommandCheck | TestCheck, Field(discriminator="kind")]


class Nfr(ArtifactModel):
    """A non-functional requirement that a check can prove."""

    id: NfrId = Field(description='"NFR" and a number, e.g. "NFR1".')
    statement: Text = Field(description="The requirement, stated so that it can be checked.")
    fitness_check: FitnessCheck = Field(description="How the requirement is checked.")


class PersistenceInvariant(ArtifactModel):
    """A rule the stored data must always satisfy (enforced in the schema where possible)."""

    id: InvariantId = Field(description='"INV" and a number, e.g. "INV1".')
    statement: Text = Field(description="The invariant, e.g. a quantity is never negative.")


class Architecture(ArtifactModel):
    """The layering, the non-functional requirements and the persistence invariants of a feature."""

    feature: FeatureId = Field(description='The feature id, e.g. "F1".')
    layers: list[LayerRule] = Field(
        min_length=1, description="The layers the application has, each with its allowed imports."
    )
    nfrs: list[Nfr] = Field(
        default_factory=list, description="Non-functional requirements, each with a fitness check."
    )
    persistence_invariants: list[PersistenceInvariant] = Field(
        default_factory=list, description="Rules the stored data must always satisfy."
    )

    @field_validator("layers")
    @classmethod
    def _imports_reference_declared_layers(cls, layers: list[LayerRule]) -> list[LayerRule]:
        declared = {rule.name for rule in layers}
        problems = [
            f"layer {name} is declared more than once"
            for name in duplicates(rule.name for rule in layers)
        ]
        for rule in layers:
            for target in rule.allowed_imports:
                if target == rule.name:
                    problems.append(f"layer {rule.name} lists itself in allowed_imports")
                elif target not in declared:
                    problems.append(
                        f"layer {rule.name} may import {target}, which is not a declared layer"
                    )
            problems += [
                f"layer {rule.name} lists {target} twice in allowed_imports"
                for target in duplicates(rule.allowed_imports)
            ]
        reject(problems)
        return layers

    @field_validator("nfrs")
    @classmethod
    def _nfr_ids_are_unique(cls, nfrs: list[Nfr]) -> list[Nfr]:
        reject([f"NFR id {i} is used more than once" for i in duplicates(n.id for n in nfrs)])
        return nfrs

    @field_validator("persistence_invariants")
    @classmethod
    def _invariant_ids_are_unique(
        cls, invariants: list[PersistenceInvariant]
    ) -> list[PersistenceInvariant]:
        reject(
            [
                f"invariant id {i} is used more than once"
                for i in duplicates(inv.id for inv in invariants)
            ]
        )
        return invariants
