"""The ledger: `.consort/ledger.jsonl`, an append-only, hash-chained log of every event.

Each line is one event in canonical JSON (sorted keys, no insignificant whitespace, UTF-8) and
carries in `prev` the SHA-256 of the previous line's exact bytes (without its newline); the first
line carries the SHA-256 of the empty string. Editing, deleting, reordering or truncating lines
breaks the chain, and `verify()` names the line where it breaks.

Consort is the ledger's only writer. Appends take `.consort/ledger.lock`, then write the whole line
with one `write` on an O_APPEND descriptor and fsync it. A `Ledger` object remembers the file as
it last read or wrote it; before every further read or append it checks that nothing else changed
the file meanwhile (a hand edit, another process, an agent turn) and raises `LedgerTampered` if
something did. Several processes may still append to one ledger: each uses a fresh `Ledger` for
its append, which verifies the whole chain before adopting it.

`hold_writer` keeps a second `consort drive` off a project that already has one running.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from consort.core.errors import ConsortError, ExitCode
from consort.core.fsutil import LockBusy, file_lock

LEDGER_FILE = "ledger.jsonl"
LEDGER_LOCK_FILE = "ledger.lock"
WRITER_LOCK_FILE = "drive.lock"

GENESIS = hashlib.sha256(b"").hexdigest()
"""The `prev` of the first event: the SHA-256 of the empty string."""

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
FIELDS = frozenset({"seq", "time", "type", "actor", "subject", "data", "prev"})

# How much of the file's end is read at a time when looking for the start of the last line.
_TAIL_CHUNK = 64 * 1024


class EventType(StrEnum):
    """What happened. Add new kinds here; the value is what the ledger stores."""

    # project and plan lane
    PROJECT_INITIALISED = "project.initialised"
    INTAKE_RECORDED = "intake.recorded"
    FEATURE_CREATED = "feature.created"
    # agent turns and what the orchestrator made of them
    TURN_STARTED = "turn.started"
    TURN_FINISHED = "turn.finished"
    TURN_FAILED = "turn.failed"
    ARTIFACT_ACCEPTED = "artifact.accepted"
    ARTIFACT_REJECTED = "artifact.rejected"
    VIOLATION_RECORDED = "violation.recorded"
    # gates
    GATE_FROZEN = "gate.frozen"
    GATE_APPROVED = "gate.approved"
    GATE_REJECTED = "gate.rejected"
    GATE_REOPENED = "gate.reopened"
    # escalations to a human
    ESCALATION_RAISED = "escalation.raised"
    ESCALATION_RESOLVED = "escalation.resolved"
    # the drive loop
    DRIVE_STARTED = "drive.started"
    DRIVE_STOPPED = "drive.stopped"
    # build lane
    CYCLE_PLANNED = "cycle.planned"
    RED_VERIFIED = "red.verified"
    RED_FAILED = "red.failed"
    GREEN_VERIFIED = "green.verified"
    GREEN_FAILED = "green.failed"
    REVIEW_RECORDED = "review.recorded"
    REFACTOR_VERIFIED = "refactor.verified"
    REFACTOR_FAILED = "refactor.failed"
    BRANCH_CREATED = "branch.created"
    # deploy and promote lanes
    DEPLOY_VERIFIED = "deploy.verified"
    DEPLOY_FAILED = "deploy.failed"
    FEATURE_PROMOTED = "feature.promoted"
    STORY_ACCEPTED = "story.accepted"
    STORY_MERGED = "story.merged"
    AMENDMENT_APPROVED = "amendment.approved"


class Actor(StrEnum):
    """Who caused an event."""

    ORCHESTRATOR = "orchestrator"
    ROLE = "role"  # a role agent's turn
    HUMAN = "human"
    PROXY = "proxy"  # the human proxy policy, in gates mode "proxy"


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


class _BadLine(ValueError):
    """A line that is not a well-formed event; the message says what is wrong."""


def parse_line(line: bytes) -> Event:
    """Parse and check one line (without its newline); raises ValueError saying what is wrong."""
    event = _event_from(_json_object(line))
    try:
        canonical = event.to_line()
    except ValueError as exc:  # NaN or Infinity in data: not standard JSON
        raise _BadLine(f"holds a number JSON cannot represent ({exc})") from exc
    if canonical != line:
        raise _BadLine("is not in canonical form (it was not written by Consort as it stands)")
    return event


def _json_object(line: bytes) -> dict[str, Any]:
    try:
        raw = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _BadLine(f"is not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise _BadLine(f"is not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(raw, dict):
        raise _BadLine(f"is a JSON {type(raw).__name__}, not an event object")
    missing = sorted(FIELDS - raw.keys())
    extra = sorted(raw.keys() - FIELDS)
    if missing:
        raise _BadLine(f"lacks field(s) {', '.join(missing)}")
    if extra:
        raise _BadLine(f"has unexpected field(s) {', '.join(extra)}")
    return raw


def _event_from(raw: dict[str, Any]) -> Event:
    seq, time, kind, actor = raw["seq"], raw["time"], raw["type"], raw["actor"]
    subject, data, prev = raw["subject"], raw["data"], raw["prev"]
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise _BadLine(f"has seq {seq!r}, not a positive integer")
    if kind not in EventType.__members__.values():
        raise _BadLine(f"has unknown event type {kind!r}")
    if actor not in Actor.__members__.values():
        raise _BadLine(f"has unknown actor {actor!r}")
    if not isinstance(subject, str):
        raise _BadLine(f"has subject {subject!r}, not a string")
    if not isinstance(data, dict):
        raise _BadLine("has data that is not a JSON object")
    if not isinstance(prev, str) or len(prev) != 64 or prev.strip("0123456789abcdef"):
        raise _BadLine(f"has prev {prev!r}, not a SHA-256 hex digest")
    return Event(seq, _parse_time(time), EventType(kind), Actor(actor), subject, data, prev)


def _parse_time(text: object) -> datetime:
    try:
        if not isinstance(text, str):
            raise TypeError(text)
        return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)
    except (TypeError, ValueError) as exc:
        raise _BadLine(
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


@dataclass(frozen=True)
class _Snapshot:
    """The ledger file as a `Ledger` last saw it: enough to notice any change cheaply."""

    exists: bool
    size: int
    device: int
    inode: int
    mtime_ns: int
    count: int  # events, i.e. the last seq
    head: str  # hash of the last line (GENESIS when empty)
    tail_start: int  # byte offset where the last line starts


@dataclass
class _Scan:
    events: list[Event] = field(default_factory=list)
    problems: list[LedgerProblem] = field(default_factory=list)
    good: int = 0
    head: str = GENESIS
    tail_start: int = 0


def _scan(content: bytes) -> _Scan:
    scan = _Scan()
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
            except _BadLine as exc:
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


# ---- errors ------------------------------------------------------------------------------------


class LedgerError(ConsortError):
    """The ledger cannot be trusted; exit code 4."""

    def __init__(self, message: str, *, fix: str | None = None):
        super().__init__(message, fix=fix, code=ExitCode.INTEGRITY)


class LedgerCorrupt(LedgerError):
    """The ledger's lines do not form a valid chain."""

    def __init__(self, path: Path, problems: tuple[LedgerProblem, ...]):
        first = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__(
            f"the ledger {path} does not verify: {first}{more}",
            fix="`consort verify` lists every problem; restore the ledger from a backup or "
            "undo the edit that broke it",
        )
        self.path = path
        self.problems = problems


class LedgerTampered(LedgerError):
    """Something other than this `Ledger` changed the file since it last read or wrote it."""

    def __init__(self, path: Path, what: str):
        super().__init__(
            f"the ledger {path} was changed by something other than Consort since it was last "
            f"read: {what}",
            fix="find out what wrote to it (agent turns must never write .consort/); "
            "`consort verify` checks the whole chain",
        )
        self.path = path
        self.what = what


class WriterBusy(ConsortError):
    """Another `consort drive` holds the project; exit code 2."""

    def __init__(self, lock: Path, pid: int | None):
        holder = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(
            f"another `consort drive` is running on this project ({holder})",
            fix=f"wait for it to stop, or stop it; its lock is {lock}",
            code=ExitCode.USAGE,
        )
        self.pid = pid


# ---- the ledger --------------------------------------------------------------------------------


def ledger_path(state_dir: Path) -> Path:
    """Where a project's ledger lives, given its `.consort/` folder."""
    return state_dir / LEDGER_FILE


class Ledger:
    """Reads, verifies and appends to one ledger file.

    Use one `Ledger` object per process: once it has read or written the file, it treats any
    change it did not make itself as tampering. A fresh object adopts what is on disk after
    verifying the whole chain.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(LEDGER_LOCK_FILE)
        self._seen: _Snapshot | None = None

    @classmethod
    def open_for_writing(cls, path: Path) -> Ledger:
        """Verify the whole ledger once; later appends only check that nothing else changed it.

        Raises LedgerCorrupt if the chain does not verify.
        """
        ledger = cls(path)
        ledger.read()
        return ledger

    @property
    def count(self) -> int:
        """Events in the ledger as this object last saw it."""
        return self._seen.count if self._seen is not None else 0

    @property
    def head(self) -> str:
        """The hash of the last line as this object last saw it (GENESIS for an empty ledger)."""
        return self._seen.head if self._seen is not None else GENESIS

    def verify(self) -> VerifyReport:
        """Check the whole chain without raising; does not change what this object remembers."""
        with file_lock(self.lock_path):
            content = self._content()
        scan = _scan(content)
        return VerifyReport(self.path, tuple(scan.events), tuple(scan.problems), scan.good)

    def read(self) -> list[Event]:
        """Every event, after verifying the chain.

        Raises LedgerCorrupt if the chain does not verify, and LedgerTampered if this object had
        already seen the file and something else changed it since.
        """
        with file_lock(self.lock_path):
            if self._seen is not None:
                self._check_unchanged(self._seen)
            content, stat = self._content_and_stat()
            scan = _scan(content)
            if scan.problems:
                raise LedgerCorrupt(self.path, tuple(scan.problems))
            self._seen = _snapshot(stat, scan)
            return scan.events

    def append(
        self,
        type: EventType | str,
        actor: Actor | str,
        subject: str,
        data: Mapping[str, Any] | None = None,
    ) -> Event:
        """Append one event and return it as stored.

        Raises LedgerTampered if something else changed the file since this object last read or
        wrote it, and LedgerCorrupt if a fresh object finds a chain that does not verify.
        """
        kind, who = EventType(type), Actor(actor)
        if not isinstance(subject, str):
            raise TypeError(f"subject must be a string, not {subject!r}")
        payload = dict(data or {})
        with file_lock(self.lock_path):
            seen = self._seen
            if seen is None:
                content, stat = self._content_and_stat()
                scan = _scan(content)
                if scan.problems:
                    raise LedgerCorrupt(self.path, tuple(scan.problems))
                seen = _snapshot(stat, scan)
            else:
                self._check_unchanged(seen)
            draft = Event(seen.count + 1, datetime.now(UTC), kind, who, subject, payload, seen.head)
            # Round-trip through the stored form, so the caller gets exactly what the file holds
            # (JSON turns tuples into lists and non-string keys into strings).
            line = canonical_json(draft.as_json()).encode("utf-8")
            event = parse_line(line)
            stat = self._write_line(line, created=not seen.exists)
            self._seen = _Snapshot(
                exists=True,
                size=stat.st_size,
                device=stat.st_dev,
                inode=stat.st_ino,
                mtime_ns=stat.st_mtime_ns,
                count=event.seq,
                head=line_hash(line),
                tail_start=seen.size,
            )
            return event

    # ---- internals ----

    def _content(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return b""

    def _content_and_stat(self) -> tuple[bytes, os.stat_result | None]:
        try:
            with self.path.open("rb") as handle:
                return handle.read(), os.fstat(handle.fileno())
        except FileNotFoundError:
            return b"", None

    def _write_line(self, line: bytes, *, created: bool) -> os.stat_result:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = line + b"\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, record)
            # One write suffices on a local file system; a short write (disk full, a signal)
            # is completed rather than left torn.
            while written < len(record):
                written += os.write(fd, record[written:])
            os.fsync(fd)
            stat = os.fstat(fd)
        finally:
            os.close(fd)
        if created:
            _fsync_dir(self.path.parent)
        return stat

    def _check_unchanged(self, seen: _Snapshot) -> None:
        """Raise LedgerTampered unless the file is exactly as this object last saw it.

        Cheap when nothing changed: a stat and a hash of the last line. Only when the file's
        identity or modification time moved while its size and last line did not is the whole
        chain verified again — a valid chain ending in the same last line proves every line the
        same.
        """
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            if seen.exists:
                raise LedgerTampered(self.path, "the file was deleted") from None
            return
        if not seen.exists:
            raise LedgerTampered(
                self.path, f"the file appeared ({stat.st_size} bytes) where there was none"
            )
        if stat.st_size != seen.size:
            change = "grew" if stat.st_size > seen.size else "shrank"
            raise LedgerTampered(
                self.path,
                f"it {change} from {seen.size} to {stat.st_size} bytes "
                f"({self._describe_growth(seen) if change == 'grew' else 'lines were removed'})",
            )
        if seen.count:
            tail = self._read_range(seen.tail_start, seen.size)
            if not tail.endswith(b"\n") or line_hash(tail[:-1]) != seen.head:
                raise LedgerTampered(self.path, f"its last line (line {seen.count}) was changed")
        same_file = (stat.st_dev, stat.st_ino) == (seen.device, seen.inode)
        if same_file and stat.st_mtime_ns == seen.mtime_ns:
            return
        # Written to (or replaced) without a change of size or last line: an edit further up?
        scan = _scan(self._content())
        if scan.problems:
            raise LedgerTampered(
                self.path, f"it was rewritten and no longer verifies: {scan.problems[0]}"
            )
        if scan.head != seen.head or len(scan.events) != seen.count:
            raise LedgerTampered(self.path, "it was rewritten with different events")
        # Same content (only its timestamps or inode moved): carry on from the file as it is.
        self._seen = _Snapshot(
            True,
            stat.st_size,
            stat.st_dev,
            stat.st_ino,
            stat.st_mtime_ns,
            seen.count,
            seen.head,
            seen.tail_start,
        )

    def _describe_growth(self, seen: _Snapshot) -> str:
        extra = self._read_range(seen.size, seen.size + _TAIL_CHUNK)
        first = extra.split(b"\n", 1)[0]
        try:
            event = parse_line(first)
        except ValueError:
            return f"something wrote after line {seen.count}"
        return (
            f"another writer appended line {seen.count + 1} ({event.type.value} by "
            f"{event.actor.value} on {event.subject or '-'})"
        )

    def _read_range(self, start: int, end: int) -> bytes:
        with self.path.open("rb") as handle:
            handle.seek(start)
            return handle.read(max(0, end - start))


def _snapshot(stat: os.stat_result | None, scan: _Scan) -> _Snapshot:
    if stat is None:
        return _Snapshot(False, 0, 0, 0, 0, 0, GENESIS, 0)
    return _Snapshot(
        exists=True,
        size=stat.st_size,
        device=stat.st_dev,
        inode=stat.st_ino,
        mtime_ns=stat.st_mtime_ns,
        count=len(scan.events),
        head=scan.head,
        tail_start=scan.tail_start,
    )


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---- one drive per project ---------------------------------------------------------------------


@contextlib.contextmanager
def hold_writer(project_state_dir: Path) -> Iterator[None]:
    """Hold the project's single-writer lock for as long as the block runs.

    Raises WriterBusy (exit code 2) at once if another process holds it. The lock is released
    when the block ends or the process dies, even by SIGKILL.
    """
    lock = project_state_dir / WRITER_LOCK_FILE
    held = contextlib.ExitStack()
    try:
        held.enter_context(file_lock(lock, blocking=False))
    except LockBusy:
        raise WriterBusy(lock, _read_pid(lock)) from None
    with held:
        _write_pid(lock, os.getpid())
        try:
            yield
        finally:
            _write_pid(lock, None)


def _write_pid(lock: Path, pid: int | None) -> None:
    # Written in place, never replaced: the lock belongs to this very file (inode).
    with lock.open("r+", encoding="ascii") as handle:
        handle.truncate(0)
        if pid is not None:
            handle.write(f"{pid}\n")
        handle.flush()


def _read_pid(lock: Path) -> int | None:
    try:
        text = lock.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
