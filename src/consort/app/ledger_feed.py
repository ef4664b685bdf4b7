"""The ledger as it grows: the events appended since the last look, for live views.

Reads only the bytes appended since the previous call (one `stat` when nothing changed), so a
live page costs one small read per append, not a re-read of the ledger or a scan of the project.
The chain itself is verified by `consort verify` and the dashboard's overview, not here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from consort.core.ledger import ledger_path
from consort.core.ledger.chain import parse_line
from consort.core.project import Project


@dataclass
class LedgerFeed:
    project: Project
    after_seq: int = 0  # events up to this seq were seen already
    _offset: int = 0
    _inode: int | None = None
    _partial: bytes = field(default=b"", repr=False)

    def poll(self) -> list[dict[str, Any]]:
        """The events appended since the last call (as their ledger lines), oldest first."""
        path = ledger_path(self.project.state_dir)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return []
        if stat.st_ino != self._inode or stat.st_size < self._offset:
            # a new file, or one rewritten shorter: read it again from the start; what was
            # seen already is skipped by its seq
            self._inode, self._offset, self._partial = stat.st_ino, 0, b""
        if stat.st_size == self._offset:
            return []
        with path.open("rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read(stat.st_size - self._offset)
        self._offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        events = []
        for line in lines:
            if not line.strip():
                continue
            try:
                event = parse_line(line)
            except ValueError:
                continue  # a broken line is the verifier's to report
            if event.seq > self.after_seq:
                self.after_seq = event.seq
                events.append(event.as_json())
        return events


def feed(project: Project, after_seq: int = 0) -> LedgerFeed:
    return LedgerFeed(project, after_seq)
