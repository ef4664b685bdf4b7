"""The ledger: `.consort/ledger.jsonl`, an append-only, hash-chained log of every event.

- `events`: the event types, their actors, and one typed payload model per type (read its
  docstring to add a type);
- `chain`: the canonical line format, hashing, parsing, and verifying a chain of lines;
- `store`: the file itself, read, verified and appended to under a lock (`Ledger`).

The names most callers need are importable from here.
"""

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
from consort.core.ledger.events import (
    PAYLOADS,
    Actor,
    EventDataInvalid,
    EventPayload,
    EventType,
    PayloadIncomplete,
    payload_of,
)
from consort.core.ledger.store import (
    Ledger,
    LedgerCorrupt,
    LedgerError,
    LedgerTampered,
    ledger_path,
)

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
