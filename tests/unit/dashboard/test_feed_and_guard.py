"""The live feed's reading of a growing ledger, and the guard's rules for decisions."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request

from consort.app.ledger_feed import LedgerFeed
from consort.core.ledger import Actor, Ledger, ledger_path
from consort.core.ledger.events import ProjectInitialised
from consort.core.project import Project
from consort.dashboard.guard import Guard, Refusal


def _project(tmp_path: Path) -> tuple[Project, Ledger]:
    (tmp_path / ".consort").mkdir()
    project = Project(tmp_path)
    return project, Ledger.open_for_writing(ledger_path(project.state_dir))


def _append(ledger: Ledger, n: int) -> None:
    for _ in range(n):
        ledger.record(ProjectInitialised(consort="test"), Actor.HUMAN, "project")


def test_each_append_is_read_once_in_order(tmp_path: Path):
    project, ledger = _project(tmp_path)
    feed = LedgerFeed(project)
    assert feed.poll() == []  # no ledger yet
    _append(ledger, 2)
    assert [e["seq"] for e in feed.poll()] == [1, 2]
    assert feed.poll() == []
    _append(ledger, 1)
    assert [e["seq"] for e in feed.poll()] == [3]


def test_a_half_written_line_waits_for_its_end(tmp_path: Path):
    project, ledger = _project(tmp_path)
    _append(ledger, 1)
    line = ledger.path.read_bytes()
    ledger.path.write_bytes(b"")
    feed = LedgerFeed(project)
    with ledger.path.open("ab") as handle:
        handle.write(line[:20])
    assert feed.poll() == []
    with ledger.path.open("ab") as handle:
        handle.write(line[20:])
    assert [e["seq"] for e in feed.poll()] == [1]


def test_it_starts_after_the_seq_given_and_survives_a_rewrite(tmp_path: Path):
    project, ledger = _project(tmp_path)
    _append(ledger, 3)
    feed = LedgerFeed(project, after_seq=2)
    assert [e["seq"] for e in feed.poll()] == [3]
    content = ledger.path.read_bytes()
    replacement = ledger.path.with_name("copy")
    replacement.write_bytes(content)
    replacement.replace(ledger.path)  # a new file with the same lines: nothing is repeated
    assert feed.poll() == []


def _request(headers: dict[str, str], method: str = "POST") -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": method, "path": "/api/approve", "headers": raw})


GOOD = {
    "host": "127.0.0.1:8123",
    "origin": "http://127.0.0.1:8123",
    "content-type": "application/json",
    "x-consort-token": "s3cret-token",
}


def test_the_guard_lets_only_the_whole_set_through():
    guard = Guard(8123, "s3cret-token")
    assert guard.check_decision(_request(GOOD)) is None
    assert (
        guard.check_decision(
            _request({**GOOD, "host": "localhost:8123", "origin": "http://localhost:8123"})
        )
        is None
    )
    cases = {
        Refusal.HOST: {"host": "evil.example:8123"},
        Refusal.ORIGIN: {"origin": "http://127.0.0.1:9999"},
        Refusal.CONTENT_TYPE: {"content-type": "text/plain"},
        Refusal.TOKEN: {"x-consort-token": "s3cret-token "},
    }
    for refusal, change in cases.items():
        assert guard.check_decision(_request({**GOOD, **change})) is refusal, change
    without_origin = {k: v for k, v in GOOD.items() if k != "origin"}
    assert guard.check_decision(_request(without_origin)) is Refusal.ORIGIN
    assert Guard(8123, None).check_decision(_request(GOOD)) is Refusal.READ_ONLY
