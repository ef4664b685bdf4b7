"""The ledger: `.consort/ledger.jsonl`, an append-only, hash-chained log of every event.

- `kinds`: the event types and their actors;
- `events`: one typed payload model per event type (read its docstring to add a type);
- `chain`: the canonical line format, hashing, parsing, and verifying a chain of lines;
- `store`: the file itself, read, verified and appended to under a lock (`Ledger`).

The names most callers need are importable from here. Those of `events` load its models, and
pydantic, on first use, so that reading and verifying the ledger (`consort log`) loads neither.
"""

from typing import TYPE_CHECKING, Any

from consort.core.ledger.chain import (
    FIELDS,
    GENESIS,
    TIME_FORMAT,
    BadLine,
    Event,
    Fault,
    LedgerProblem,
    VerifyReport,
    canonical_json,
    format_time,
    line_hash,
    parse_line,
    scan_lines,
)
from consort.core.ledger.kinds import Actor, EventType
from consort.core.ledger.store import (
    Ledger,
    LedgerCorrupt,
    LedgerError,
    LedgerTampered,
    ledger_path,
)

if TYPE_CHECKING:
    from consort.core.ledger.events import (
        PAYLOADS,
        EventDataInvalid,
        EventPayload,
        PayloadIncomplete,
        payload_of,
    )

_FROM_EVENTS = frozenset(
    {"PAYLOADS", "EventDataInvalid", "EventPayload", "PayloadIncomplete", "payload_of"}
)


def __getattr__(name: str) -> Any:
    if name in _FROM_EVENTS:
        from consort.core.ledger import events

        return getattr(events, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FIELDS",
    "GENESIS",
    "PAYLOADS",
    "TIME_FORMAT",
    "Actor",
    "BadLine",
    "Event",
    "EventDataInvalid",
    "EventPayload",
    "EventType",
    "Fault",
    "Ledger",
    "LedgerCorrupt",
    "LedgerError",
    "LedgerProblem",
    "LedgerTampered",
    "PayloadIncomplete",
    "VerifyReport",
    "canonical_json",
    "format_time",
    "ledger_path",
    "line_hash",
    "parse_line",
    "payload_of",
    "scan_lines",
]
