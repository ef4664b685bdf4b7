"""The ledger file, `.consort/ledger.jsonl`: reading, verifying and appending, under a lock.

Consort is the ledger's only writer. Appends take `.consort/ledger.lock`, note the line and where
it goes in that lock file, then write the whole line with one `write` on an O_APPEND descriptor,
fsync it and clear the note: an append a kill cut short is finished from the note by the next
reader, under the lock (`Ledger._whole_lines`). A `Ledger` object remembers the file as
it last read or wrote it; before every further read or append it checks that nothing else changed
the file meanwhile (a hand edit, another process, an agent turn) and raises `LedgerTampered` if
something did. Several processes may still append to one ledger: each uses a fresh `Ledger` for
its append, which verifies the whole chain before adopting it.

The line format and the chain are `chain`'s; the payloads are `events`'.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consort.core.errors import ConsortError, ExitCode
from consort.core.fsutil import file_lock
from consort.core.layout import LEDGER_LOCK_FILE, Layout
from consort.core.ledger.chain import (
    GENESIS,
    Event,
    LedgerProblem,
    Scan,
    VerifyReport,
    canonical_json,
    line_hash,
    parse_line,
    scan_lines,
)
from consort.core.ledger.kinds import Actor, EventType

if TYPE_CHECKING:
    from consort.core.ledger.events import EventPayload

# How much of the file's end is read at a time when looking for the start of the last line.
_TAIL_CHUNK = 64 * 1024


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


# ---- the ledger --------------------------------------------------------------------------------


def ledger_path(state_dir: Path) -> Path:
    """Where a project's ledger lives, given its `.consort/` folder."""
    return Layout(state_dir).ledger


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
            content, _ = self._whole_lines()
        scan = scan_lines(content)
        return VerifyReport(self.path, tuple(scan.events), tuple(scan.problems), scan.good)

    def read(self) -> list[Event]:
        """Every event, after verifying the chain.

        Raises LedgerCorrupt if the chain does not verify, and LedgerTampered if this object had
        already seen the file and something else changed it since.
        """
        with file_lock(self.lock_path):
            if self._seen is not None:
                self._check_unchanged(self._seen)
            content, stat = self._whole_lines()
            scan = scan_lines(content)
            if scan.problems:
                raise LedgerCorrupt(self.path, tuple(scan.problems))
            self._seen = _snapshot(stat, scan)
            return scan.events

    def record(self, payload: EventPayload, actor: Actor, subject: str) -> Event:
        """Append one event of the payload's type, with the payload as its data.

        The way Consort writes its events; raises PayloadIncomplete if the payload lacks a field
        its type always carries, and what `append` raises.
        """
        return self.append(
            payload.event_type, actor, subject, without_passwords(payload.data_to_write())
        )

    def append(
        self,
        type: EventType | str,
        actor: Actor | str,
        subject: str,
        data: Mapping[str, Any] | None = None,
    ) -> Event:
        """Append one event with `data` as given and return it as stored.

        The chain's own primitive: Consort's writers go through `record`, with a typed payload.

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
                content, stat = self._whole_lines()
                scan = scan_lines(content)
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
            stat = self._write_line(line, seen.size, created=not seen.exists)
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

    def _whole_lines(self) -> tuple[bytes, os.stat_result | None]:
        """The file's content and stat, with an append a kill cut short finished; called with
        the lock held (so no append is under way).

        The kernel ends a write to a file early, at a page boundary, when its writer gets
        SIGKILL: a drive killed while appending leaves part of a line. Each append first writes
        the line it is about to add, and where, into the lock file (`_write_line`); a last line
        that is that line's beginning, at that place, is finished from it. Anything else after
        the last newline (a truncation, bytes of someone else's) is left for `scan_lines` to
        report as a torn line."""
        content, stat = self._content_and_stat()
        if not content or content.endswith(b"\n"):
            return content, stat
        start = content.rfind(b"\n") + 1
        torn = content[start:]
        intent = _read_intent(self.lock_path)
        if intent is None or intent[0] != start or not intent[1].startswith(torn):
            return content, stat
        rest = intent[1][len(torn) :]
        stat = _append_synced(self.path, rest)
        _write_intent(self.lock_path, b"")
        return content + rest, stat

    def _content_and_stat(self) -> tuple[bytes, os.stat_result | None]:
        try:
            with self.path.open("rb") as handle:
                return handle.read(), os.fstat(handle.fileno())
        except FileNotFoundError:
            return b"", None

    def _write_line(self, line: bytes, start: int, *, created: bool) -> os.stat_result:
        """Append `line` to the file, which is `start` bytes long; the line and `start` stay in
        the lock file until it is whole on disk, for `_whole_lines` to finish it from after a
        kill."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = line + b"\n"
        _write_intent(self.lock_path, f"{start}\n".encode() + record)
        stat = _append_synced(self.path, record)
        _write_intent(self.lock_path, b"")  # the line is whole
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
        scan = scan_lines(self._content())
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


def _snapshot(stat: os.stat_result | None, scan: Scan) -> _Snapshot:
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


# The password of a login written into a URL (`postgresql://role:PASSWORD@host/db`). What Consort
# records may quote a process's output (a failed migration's, a run's tail), and the ledger is
# committed with the evidence, where every later turn reads git's objects.
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@\"]*:)[^\s/@\"]+@", re.IGNORECASE)


def without_passwords(value: Any) -> Any:
    """`value` (an event's data) with every password written into a URL as `***`."""
    if isinstance(value, str):
        return _URL_PASSWORD.sub(r"\1***@", value) if "://" in value else value
    if isinstance(value, dict):
        return {key: without_passwords(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [without_passwords(item) for item in value]
    return value


def _write_all(fd: int, data: bytes) -> None:
    """Write all of `data`: one write suffices on a local file system, and a short one (disk
    full, a signal) is completed rather than left torn."""
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, data[written:])


def _write_intent(lock_path: Path, intent: bytes) -> None:
    """Replace what the lock file holds: an append under way (its start, a newline, its line),
    or nothing. The lock file is Consort's alone and never committed."""
    fd = os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        _write_all(fd, intent)
    finally:
        os.close(fd)


def _read_intent(lock_path: Path) -> tuple[int, bytes] | None:
    """The append under way the lock file holds (where it starts, the line with its newline),
    or None."""
    try:
        data = lock_path.read_bytes()
    except FileNotFoundError:
        return None
    head, newline, record = data.partition(b"\n")
    if not newline or not head.isdigit() or not record.endswith(b"\n"):
        return None
    return int(head), record


def _append_synced(path: Path, data: bytes) -> os.stat_result:
    """Append all of `data` to `path` (made if missing) and fsync it; the file's stat after."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
        return os.fstat(fd)
    finally:
        os.close(fd)
