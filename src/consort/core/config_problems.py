"""A pydantic validation error of a configuration table, as a person reads it: every bad key named,
the nearest valid key for a misspelt one, and a `fix:` saying what to change."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ValidationError

from consort.core.errors import UsageError


@dataclass(frozen=True)
class Problem:
    key: str  # dotted, as written in the file: "test.comand"
    message: str
    fix: str


def _nested_model(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    """The model of the table `name` in `model`, if that field is a table with known keys."""
    field = model.model_fields.get(name)
    if field is None:
        return None
    candidates = [field.annotation, *typing.get_args(field.annotation)]
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _keys_at(model: type[BaseModel], path: Sequence[str]) -> list[str]:
    """The keys the table at `path` (below `model`) may hold."""
    current: type[BaseModel] | None = model
    for name in path:
        current = _nested_model(current, name) if current is not None else None
    if current is None:
        return []
    return [field.alias or name for name, field in current.model_fields.items()]


def _table(prefix: str, path: Sequence[str]) -> str:
    """How a person finds the table in the file: "[test]", "[agents.driver]", "the top level"."""
    names = [*([prefix] if prefix else []), *path]
    return f"[{'.'.join(names)}]" if names else "the top level"


def problems_of(exc: ValidationError, model: type[BaseModel], *, prefix: str = "") -> list[Problem]:
    """`exc` raised by validating `model`; `prefix` is the table the model reads ("agents.driver"
    for a role's table, "" for the whole file)."""
    found = []
    for err in exc.errors():
        loc = [str(part) for part in err["loc"]]
        key = ".".join(loc) or "(table)"
        if err["type"] == "extra_forbidden" and loc:
            *path, name = loc
            table = _table(prefix, path)
            valid = _keys_at(model, path)
            nearest = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
            if nearest:
                message = f"{key}: unknown key, did you mean {nearest[0]}?"
                fix = f"in {table}, rename {name} to {nearest[0]} (or remove it)"
            else:
                message = f"{key}: unknown key"
                shown = ", ".join(valid) if valid else "none"
                fix = f"remove {name} from {table}; the keys it may hold are: {shown}"
        else:
            given = err.get("input")
            if isinstance(given, dict):  # a rule about a whole table
                message = f"{key}: {err['msg']}"
                fix = f"correct {_table(prefix, loc)}"
            else:
                message = f"{key}: {err['msg']} (it is {given!r})"
                *path, name = loc or ["(table)"]
                fix = f"correct {name} in {_table(prefix, path)}"
        found.append(Problem(key, message, fix))
    return found


def invalid(
    where: str, exc: ValidationError, model: type[BaseModel], *, prefix: str = ""
) -> UsageError:
    """The one UsageError for a table that does not validate: `where` names it ("consort.toml",
    "consort.toml [agents.driver]")."""
    found = problems_of(exc, model, prefix=prefix)
    return UsageError(
        f"{where} is invalid: " + "; ".join(p.message for p in found),
        fix="; ".join(dict.fromkeys(p.fix for p in found)),
    )
