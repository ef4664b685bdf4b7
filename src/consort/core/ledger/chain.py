"""The ledger's hash chain: the canonical form of an event line, parsing, and verification.

Each line is one event in canonical JSON (sorted keys, no insignificant whitespace, UTF-8) and
carries in `prev` the SHA-256 of the previous line's exact bytes (without its newline); the first
line carries the SHA-256 of the empty string. Editing, deleting, reordering or truncating lines
breaks the chain, and `scan` names the line where it breaks.

Pure: bytes in, events and problems out. Reading and writing the file is `store`'s.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consort.core.ledger.kinds import Actor, EventType

if TYPE_CHECKING:
    from consort.core.ledger.events import EventPayload

GENESIS = hashlib.sha256(b"").hexdigest()
"""The `prev` of the first event: the SHA-256 of the empty string."""

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
FIELDS = frozenset({"seq", "time", "type", "actor", "subject", "data", "prev"})

# ---- events and their canonical form -------------------------------------------------------


def canonical_json(value: Any) -> str:
    """The one serialisation Consort hashes: sorted keys, no whitespace, UTF-8, no NaN."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def line_hash(line: bytes) -> str:
    """SHA-256 hex of a ledger line's exact bytes, without its newline."""
    return hashlib.sha256(line).hexdigest()


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


# `format_time`'s own shape: read by `datetime.fromisoformat`, which gives what `strptime` gives
# for it without loading `_strptime` (and about twenty times faster, for every event read).
WRITTEN_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", re.ASCII)


def parse_time(text: str) -> datetime:
    """A time in `TIME_FORMAT`, in UTC; ValueError when it is none."""
    if WRITTEN_TIME.fullmatch(text):
        with contextlib.suppress(ValueError):  # no such day or hour: strptime says so
            return datetime.fromisoformat(text[:-1]).replace(tzinfo=UTC)
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


@dataclass(frozen=True)
class Event:
    """One ledger line."""

    seq: int
    time: datetime
    type: EventType
    actor: Actor
    subject: str
    data: dict[str, Any]
    prev: str

    def as_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": format_time(self.time),
            "type": self.type.value,
            "actor": self.actor.value,
            "subject": self.subject,
            "data": self.data,
            "prev": self.prev,
        }

    def to_line(self) -> bytes:
        """The event's line as stored, without the newline."""
        return canonical_json(self.as_json()).encode("utf-8")

    @property
    def hash(self) -> str:
        """The SHA-256 of this event's line: the next event's `prev`."""
        return line_hash(self.to_line())

    @cached_property
    def payload(self) -> EventPayload:
        """`data` as its type's model (parsed on first use; raises EventDataInvalid)."""
        from consort.core.ledger.events import payload_of  # the models load on first use

        return payload_of(self)


class BadLine(ValueError):
    """A line that is not a well-formed event; the message says what is wrong."""


def parse_line(line: bytes) -> Event:
    """Parse and check one line (without its newline); raises ValueError saying what is wrong."""
    event = _event_from(_json_object(line))
    try:
        canonical = event.to_line()
    except ValueError as exc:  # NaN or Infinity in data: not standard JSON
        raise BadLine(f"holds a number JSON cannot represent ({exc})") from exc
    if canonical != line:
        raise BadLine("is not in canonical form (it was not written by Consort as it stands)")
    return event


def _json_object(line: bytes) -> dict[str, Any]:
    try:
        raw = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadLine(f"is not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise BadLine(f"is not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(raw, dict):
        raise BadLine(f"is a JSON {type(raw).__name__}, not an event object")
    missing = sorted(FIELDS - raw.keys())
    extra = sorted(raw.keys() - FIELDS)
    if missing:
        raise BadLine(f"lacks field(s) {', '.join(missing)}")
    if extra:
        raise BadLine(f"has unexpected field(s) {', '.join(extra)}")
    return raw


def _event_from(raw: dict[str, Any]) -> Event:
    seq, time, kind, actor = raw["seq"], raw["time"], raw["type"], raw["actor"]
    subject, data, prev = raw["subject"], raw["data"], raw["prev"]
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise BadLine(f"has seq {seq!r}, not a positive integer")
    if kind not in EventType.__members__.values():
        raise BadLine(f"has unknown event type {kind!r}")
    if actor not in Actor.__members__.values():
        raise BadLine(f"has unknown actor {actor!r}")
    if not isinstance(subject, str):
        raise BadLine(f"has subject {subject!r}, not a string")
    if not isinstance(data, dict):
        raise BadLine("has data that is not a JSON object")
    if not isinstance(prev, str) or len(prev) != 64 or prev.strip("0123456789abcdef"):
        raise BadLine(f"has prev {prev!r}, not a SHA-256 hex digest")
    return Event(seq, _parse_time(time), EventType(kind), Actor(actor), subject, data, prev)


def _parse_time(text: object) -> datetime:
    try:
        if not isinstance(text, str):
            raise TypeError(text)
        return parse_time(text)
    except (TypeError, ValueError) as exc:
        raise BadLine(
            f"has time {text!r}, not UTC ISO-8601 like 2024-01-31T12:00:00.000000Z"
        ) from exc


# ---- verification -----------------------------------------------------------------------------


class Fault(StrEnum):
    """The kinds of problem `verify` finds."""

    MALFORMED = "malformed"  # bad UTF-8 or JSON, wrong fields, not canonical
    EMPTY_LINE = "empty-line"
    TORN = "torn"  # the last line lacks its newline: an interrupted write or a truncation
    BAD_SEQ = "bad-seq"  # a line was removed, inserted or moved
    BROKEN_CHAIN = "broken-chain"  # a line's prev does not match the line before it


@dataclass(frozen=True)
class LedgerProblem:
    line: int  # 1-based
    fault: Fault
    detail: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.detail}"


@dataclass(frozen=True)
class VerifyReport:
    """What `verify` found.

    `events` holds every line that parsed into a well-formed event, in file order, including
    ones after a problem; `good` counts the leading events whose chain holds (the part of the
    ledger that can be trusted).
    """

    path: Path
    events: tuple[Event, ...]
    problems: tuple[LedgerProblem, ...]
    good: int

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class Scan:
    """What `scan_lines` found: the events that parsed, the problems, and where the chain ends."""

    events: list[Event] = field(default_factory=list)
    problems: list[LedgerProblem] = field(default_factory=list)
    good: int = 0
    head: str = GENESIS
    tail_start: int = 0


def scan_lines(content: bytes) -> Scan:
    scan = Scan()
    if not content:
        return scan
    lines = content.split(b"\n")
    torn = lines[-1] != b""
    if not torn:
        lines.pop()  # the empty remainder after the final newline
    prev_line: bytes | None = None
    prev_event: Event | None = None
    offset = 0
    for number, line in enumerate(lines, start=1):
        problem: LedgerProblem | None = None
        event: Event | None = None
        if torn and number == len(lines):
            problem = LedgerProblem(
                number,
                Fault.TORN,
                "is incomplete: the file ends without a newline (an interrupted write or a "
                "truncation)",
            )
        elif not line:
            problem = LedgerProblem(number, Fault.EMPTY_LINE, "is empty")
        else:
            try:
                event = parse_line(line)
            except BadLine as exc:
                problem = LedgerProblem(number, Fault.MALFORMED, str(exc))
        if event is not None:
            problem = _chain_problem(number, event, prev_line, prev_event)
            scan.events.append(event)
        if problem is not None:
            scan.problems.append(problem)
        elif not scan.problems:
            scan.good += 1
        scan.tail_start = offset
        offset += len(line) + 1
        prev_line, prev_event = line, event
    scan.head = line_hash(prev_line) if prev_line is not None else GENESIS
    return scan


def _chain_problem(
    number: int, event: Event, prev_line: bytes | None, prev_event: Event | None
) -> LedgerProblem | None:
    expected_seq = prev_event.seq + 1 if prev_event is not None else number
    if event.seq != expected_seq:
        if number == 1:
            where = "the first line must have seq 1: lines before it were removed"
        elif prev_event is None:
            where = f"seq {event.seq} does not fit line {number}"
        else:
            where = (
                f"seq {event.seq} follows seq {expected_seq - 1}: a line was removed, inserted "
                "or moved just before it"
            )
        return LedgerProblem(
            number, Fault.BAD_SEQ, f"has seq {event.seq}, expected {expected_seq} ({where})"
        )
    expected_prev = GENESIS if prev_line is None else line_hash(prev_line)
    if event.prev != expected_prev:
        if prev_line is None:
            detail = "is the first line but its prev is not the hash of the empty string"
        else:
            detail = (
                f"its prev does not match the SHA-256 of line {number - 1}: line {number - 1} "
                f"was changed after line {number} was written, or line {number} was not written "
                "by Consort"
            )
        return LedgerProblem(number, Fault.BROKEN_CHAIN, detail)
    return None
