"""Canonical JSON and its SHA-256: what gate approvals bind to.

The canonical form of a JSON value is its serialisation with keys sorted, no insignificant
whitespace (separators "," and ":"), non-ASCII characters kept as themselves and encoded as
UTF-8. Two files that parse to the same value have the same canonical form, so re-indenting or
re-ordering keys keeps a file's hash, while any change of content changes it. NaN and Infinity
are not JSON and are refused, as are duplicate object keys (which would make "the same value"
ambiguous).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from consort.core.errors import ConsortError


class NotCanonicalJson(ConsortError):
    """A value or file that has no canonical JSON form (NaN, a non-JSON type, invalid JSON, ...)."""


class JsonSyntaxProblem(ValueError):
    """Text that is not strict JSON; the message gives the line and column."""


def canonical_json(obj: Any) -> bytes:
    """The canonical JSON bytes of a JSON value (dict, list, str, int, float, bool, None)."""
    try:
        text = json.dumps(
            obj,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        return text.encode("utf-8")
    except ValueError as exc:  # NaN or Infinity (allow_nan=False); also circular references
        raise NotCanonicalJson(f"value has no canonical JSON form: {exc}") from exc
    except TypeError as exc:  # a non-JSON type, or non-string keys that json cannot sort
        raise NotCanonicalJson(f"value has no canonical JSON form: {exc}") from exc
    except UnicodeEncodeError as exc:  # lone surrogates cannot be encoded as UTF-8
        raise NotCanonicalJson(f"value has no canonical JSON form: {exc.reason}") from exc


def sha256_canonical(obj: Any) -> str:
    """The hex SHA-256 of the canonical JSON form of `obj`."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def parse_json_text(text: str) -> Any:
    """Parse strict JSON: no NaN/Infinity, no duplicate keys. Raises JsonSyntaxProblem."""
    try:
        return json.loads(
            text, parse_constant=_refuse_constant, object_pairs_hook=_refuse_duplicate_keys
        )
    except json.JSONDecodeError as exc:
        raise JsonSyntaxProblem(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc


def read_json_file(path: Path) -> Any:
    """Read and parse a JSON file strictly, raising NotCanonicalJson that names the file."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError as exc:
        raise NotCanonicalJson(f"{path} not found") from exc
    except UnicodeDecodeError as exc:
        raise NotCanonicalJson(f"{path} is not UTF-8 text: {exc.reason}") from exc
    except OSError as exc:
        raise NotCanonicalJson(f"{path} cannot be read: {exc.strerror}") from exc
    try:
        return parse_json_text(text)
    except JsonSyntaxProblem as exc:
        raise NotCanonicalJson(f"{path}: {exc}") from exc


def artifact_hash(path: Path) -> str:
    """The hex SHA-256 of the canonical form of the JSON file at `path`.

    Formatting (indentation, key order, escapes such as "\\u00e9" for "é") does not change the
    hash; any change of a key or value does.
    """
    return sha256_canonical(read_json_file(path))


def _refuse_constant(name: str) -> Any:
    # json calls this for NaN, Infinity and -Infinity, which are not JSON. The parser does not
    # pass the position, so the message names the constant instead.
    raise JsonSyntaxProblem(f"invalid JSON: {name} is not a JSON number")


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise JsonSyntaxProblem(f"invalid JSON: duplicate key {key!r} in one object")
        result[key] = value
    return result
