"""Reading an agent's JSON Lines output (Claude Code stream-json, Codex exec --json), tolerantly.

The stream is read from the stdout file after the process ended (the process runner already
writes it to disk as it comes, which is also what the inactivity timeout watches). A line that is
not a JSON object — a stray log line, a line cut short when the process was killed — is counted
and kept aside, never fatal: what the other lines say still counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MALFORMED_KEPT = 20  # malformed lines kept (shortened) for the record
MALFORMED_WIDTH = 200


@dataclass(frozen=True)
class StreamLines:
    events: list[dict[str, Any]] = field(default_factory=list)
    malformed: int = 0
    malformed_samples: list[str] = field(default_factory=list)


def read_jsonl(path: Path) -> StreamLines:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return StreamLines()
    events: list[dict[str, Any]] = []
    malformed = 0
    samples: list[str] = []
    for raw in data.decode("utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        if isinstance(value, dict):
            events.append(value)
            continue
        malformed += 1
        if len(samples) < MALFORMED_KEPT:
            samples.append(line[:MALFORMED_WIDTH])
    return StreamLines(events, malformed, samples)


def text_of(content: object) -> str:
    """The text of a message content: a string, or a list of {"type": "text", "text": ...}."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(block.get("text", ""))
            for block in content
            if isinstance(block, dict) and isinstance(block.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    return float(value) if isinstance(value, int | float) else None


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
