"""`consort schema NAME`: the JSON Schema an artifact must satisfy (no project needed)."""

from __future__ import annotations

from typing import Any

from consort.core.errors import UsageError


def kinds() -> list[str]:
    """The artifact names `schema` takes, in their fixed order."""
    from consort.core.artifacts.registry import ArtifactKind

    return [kind.value for kind in ArtifactKind]


def schema(name: str | None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of artifact NAME; a UsageError names the valid ones."""
    from consort.core.artifacts.registry import json_schema, parse_kind

    if name is None:
        raise UsageError("which artifact? give its NAME", fix=f"use one of: {', '.join(kinds())}")
    return json_schema(parse_kind(name))
