"""The ledger: hash chain, canonical form, tamper detection, the writer lock, `consort log`."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from consort.app.log import select
from consort.cli.log import summary
from consort.cli.main import cli
from consort.core.drive_lock import WriterBusy, hold_writer
from consort.core.errors import ExitCode
from consort.core.ledger import (
    GENESIS,
    Actor,
    Event,
    EventType,
    Fault,
    Ledger,
    LedgerCorrupt,
    LedgerTampered,
    ledger_path,
    parse_line,
)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return ledger_path(tmp_path / ".consort")


def fill(path: Path, count: int) -> list[Event]:
    ledger = Ledger(path)
    return [
        ledger.append(EventType.TURN_STARTED, Actor.ROLE, f"F1/S1/T{n}", {"n": n, "role": "driver"})
        for n in range(1, count + 1)
    ]


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def write_lines(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- the chain and the canonical form ---------------------------------------------------------


def test_each_line_carries_the_hash_of_the_line_before(path: Path) -> None:
    events = fill(path, 4)
    lines = lines_of(path)
    assert len(lines) == 4
    assert sha(b"") == GENESIS
    assert json.loads(lines[0])["prev"] == sha(b"")
    for before, line in itertools.pairwise(lines):
        assert json.loads(line)["prev"] == sha(before)
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert [e.hash for e in events] == [sha(line) for line in lines]


def test_lines_are_canonical_json_in_utf8(path: Path) -> None:
    ledger = Ledger(path)
    event = ledger.append(
        EventType.INTAKE_RECORDED, Actor.HUMAN, "F1", {"zeta": 1, "alpha": "Grüße ✓", "list": [1]}
    )
    line = lines_of(path)[0]
    raw = json.loads(line)
    assert line == json.dumps(
        raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    assert "Grüße ✓".encode() in line  # stored as UTF-8, not \\u escapes
    assert set(raw) == {"seq", "time", "type", "actor", "subject", "data", "prev"}
    assert raw["type"] == "intake.recorded"
    assert raw["actor"] == "human"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", raw["time"])
    assert event.to_line() == line
    assert parse_line(line) == event
    assert event.time.tzinfo is UTC
    assert abs((datetime.now(UTC) - event.time).total_seconds()) < 60


def test_append_returns_the_event_as_stored(path: Path) -> None:
    event = Ledger(path).append("gate.frozen", "orchestrator", "F1", {"paths": ("a", "b")})
    assert event.type is EventType.GATE_FROZEN
    assert event.actor is Actor.ORCHESTRATOR
    assert event.data == {"paths": ["a", "b"]}  # what JSON stores, not the tuple passed in
    assert Ledger(path).read() == [event]


def test_unknown_type_or_actor_is_refused_before_writing(path: Path) -> None:
    with pytest.raises(ValueError, match=r"gate\.eaten"):
        Ledger(path).append("gate.eaten", Actor.HUMAN, "F1", {})
    with pytest.raises(ValueError, match="robot"):
        Ledger(path).append(EventType.GATE_APPROVED, "robot", "F1", {})
    with pytest.raises(ValueError, match="JSON"):
        Ledger(path).append(EventType.GATE_APPROVED, Actor.HUMAN, "F1", {"x": float("nan")})
    assert not path.exists()


def test_missing_ledger_reads_as_empty_and_verifies(path: Path) -> None:
    assert Ledger(path).read() == []
    report = Ledger(path).verify()
    assert report.ok
    assert report.good == 0


def test_good_ledger_verifies(path: Path) -> None:
    fill(path, 5)
    report = Ledger(path).verify()
    assert report.ok
    assert report.good == 5
    assert [e.seq for e in report.events] == [1, 2, 3, 4, 5]
    assert [e.subject for e in Ledger(path).read()] == [f"F1/S1/T{n}" for n in range(1, 6)]


# ---- tamper detection by verify: it names the exact line --------------------------------------


def only_problem(path: Path) -> tuple[int, Fault, str]:
    report = Ledger(path).verify()
    assert not report.ok
    first = report.problems[0]
    return first.line, first.fault, first.detail


def test_edited_line_breaks_the_chain_at_the_next_line_naming_it(path: Path) -> None:
    fill(path, 5)
    lines = lines_of(path)
    lines[2] = lines[2].replace(b'"n":3', b'"n":9')  # still canonical, same length
    write_lines(path, lines)
    report = Ledger(path).verify()
    assert [(p.line, p.fault) for p in report.problems] == [(4, Fault.BROKEN_CHAIN)]
    assert "line 3 was changed" in report.problems[0].detail
    assert report.good == 3
    with pytest.raises(LedgerCorrupt) as caught:
        Ledger(path).read()
    assert caught.value.code == ExitCode.INTEGRITY
    assert "line 4" in caught.value.message
    assert "line 3 was changed" in caught.value.message


def test_edit_that_changes_the_form_is_named_at_its_own_line(path: Path) -> None:
    fill(path, 3)
    lines = lines_of(path)
    lines[1] = json.dumps(json.loads(lines[1]), indent=None).encode()  # spaces after separators
    write_lines(path, lines)
    line, fault, detail = only_problem(path)
    assert (line, fault) == (2, Fault.MALFORMED)
    assert "canonical" in detail


def test_deleted_line_is_named(path: Path) -> None:
    fill(path, 5)
    lines = lines_of(path)
    del lines[2]
    write_lines(path, lines)
    report = Ledger(path).verify()
    assert [(p.line, p.fault) for p in report.problems] == [(3, Fault.BAD_SEQ)]
    assert "seq 4, expected 3" in report.problems[0].detail


def test_deleted_first_line_is_named(path: Path) -> None:
    fill(path, 3)
    write_lines(path, lines_of(path)[1:])
    line, fault, detail = only_problem(path)
    assert (line, fault) == (1, Fault.BAD_SEQ)
    assert "first line must have seq 1" in detail


def test_reordered_lines_are_named(path: Path) -> None:
    fill(path, 5)
    lines = lines_of(path)
    lines[1], lines[2] = lines[2], lines[1]
    write_lines(path, lines)
    report = Ledger(path).verify()
    assert report.problems[0].line == 2
    assert report.problems[0].fault is Fault.BAD_SEQ
    assert {p.line for p in report.problems} == {2, 3, 4}
    assert report.good == 1


def test_truncated_last_line_is_named(path: Path) -> None:
    fill(path, 4)
    data = path.read_bytes()
    path.write_bytes(data[:-20])
    report = Ledger(path).verify()
    assert [(p.line, p.fault) for p in report.problems] == [(4, Fault.TORN)]
    assert report.good == 3
    assert len(report.events) == 3


def test_missing_final_newline_is_a_torn_line(path: Path) -> None:
    fill(path, 2)
    path.write_bytes(path.read_bytes()[:-1])
    line, fault, _ = only_problem(path)
    assert (line, fault) == (2, Fault.TORN)


def test_appended_foreign_line_is_named(path: Path) -> None:
    events = fill(path, 3)
    forged = Event(4, datetime.now(UTC), EventType.GATE_APPROVED, Actor.HUMAN, "F1", {}, GENESIS)
    with path.open("ab") as handle:
        handle.write(forged.to_line() + b"\n")
    line, fault, detail = only_problem(path)
    assert (line, fault) == (4, Fault.BROKEN_CHAIN)
    assert "line 4 was not written by Consort" in detail
    assert events[-1].seq == 3


def test_appended_garbage_line_is_named(path: Path) -> None:
    fill(path, 3)
    with path.open("ab") as handle:
        handle.write(b"approved: yes\n")
    line, fault, detail = only_problem(path)
    assert (line, fault) == (4, Fault.MALFORMED)
    assert "not valid JSON" in detail


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda raw: raw.update(type="gate.eaten"), "unknown event type 'gate.eaten'"),
        (lambda raw: raw.update(actor="robot"), "unknown actor 'robot'"),
        (lambda raw: raw.update(seq="2"), "not a positive integer"),
        (lambda raw: raw.update(data=[1]), "data that is not a JSON object"),
        (lambda raw: raw.update(time="yesterday"), "not UTC ISO-8601"),
        (lambda raw: raw.update(prev="abc"), "not a SHA-256 hex digest"),
        (lambda raw: raw.pop("subject"), "lacks field(s) subject"),
        (lambda raw: raw.update(extra=1), "unexpected field(s) extra"),
    ],
)
def test_malformed_fields_are_named(path: Path, edit: object, expected: str) -> None:
    fill(path, 3)
    lines = lines_of(path)
    raw = json.loads(lines[1])
    edit(raw)  # type: ignore[operator]
    lines[1] = json.dumps(raw, sort_keys=True, separators=(",", ":")).encode()
    write_lines(path, lines)
    report = Ledger(path).verify()
    assert report.problems[0].line == 2
    assert report.problems[0].fault is Fault.MALFORMED
    assert expected in report.problems[0].detail


# ---- tamper detection between appends ----------------------------------------------------------


def test_writer_detects_an_edit_of_an_earlier_line_of_the_same_size(path: Path) -> None:
    fill(path, 4)
    ledger = Ledger.open_for_writing(path)
    ledger.append(EventType.TURN_FINISHED, Actor.ROLE, "F1", {})
    lines = lines_of(path)
    lines[1] = lines[1].replace(b'"n":2', b'"n":7')
    before = path.stat()
    write_lines(path, lines)
    # A real edit comes a turn later than the append; make sure the coarse file clock shows it.
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    with pytest.raises(LedgerTampered) as caught:
        ledger.append(EventType.TURN_FINISHED, Actor.ROLE, "F1", {})
    assert caught.value.code == ExitCode.INTEGRITY
    assert "line 3" in caught.value.message
    assert len(lines_of(path)) == 5  # nothing was appended


def test_writer_detects_an_edit_of_the_last_line(path: Path) -> None:
    ledger = Ledger(path)
    ledger.append(EventType.GATE_FROZEN, Actor.ORCHESTRATOR, "F1", {"gate": "design"})
    ledger.append(EventType.GATE_REJECTED, Actor.HUMAN, "F1", {"gate": "design"})
    path.write_bytes(path.read_bytes().replace(b"gate.rejected", b"gate.approved"))
    # The chain alone cannot see this (no line follows the last one); the writer can.
    assert Ledger(path).verify().ok
    with pytest.raises(LedgerTampered, match=r"last line \(line 2\) was changed"):
        ledger.append(EventType.DRIVE_STOPPED, Actor.ORCHESTRATOR, "", {})


def test_writer_detects_another_writer(path: Path) -> None:
    ledger = Ledger.open_for_writing(path)
    ledger.append(EventType.DRIVE_STARTED, Actor.ORCHESTRATOR, "", {})
    Ledger(path).append(EventType.GATE_APPROVED, Actor.HUMAN, "F1", {"gate": "design"})
    with pytest.raises(LedgerTampered, match=r"appended line 2 \(gate.approved by human on F1\)"):
        ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1", {})
    with pytest.raises(LedgerTampered):
        ledger.read()


def test_writer_detects_truncation_and_deletion(path: Path) -> None:
    ledger = Ledger(path)
    fill(path, 1)
    ledger.read()
    ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1", {})
    write_lines(path, lines_of(path)[:1])
    with pytest.raises(LedgerTampered, match="shrank"):
        ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1", {})
    path.unlink()
    with pytest.raises(LedgerTampered, match="deleted"):
        ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1", {})


def test_writer_detects_a_ledger_appearing(path: Path) -> None:
    ledger = Ledger.open_for_writing(path)
    assert ledger.count == 0
    fill(path, 1)
    with pytest.raises(LedgerTampered, match="appeared"):
        ledger.append(EventType.PROJECT_INITIALISED, Actor.ORCHESTRATOR, "", {})


def test_writer_accepts_a_touch_that_changed_nothing(path: Path) -> None:
    ledger = Ledger.open_for_writing(path)
    ledger.append(EventType.DRIVE_STARTED, Actor.ORCHESTRATOR, "", {})
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    event = ledger.append(EventType.DRIVE_STOPPED, Actor.ORCHESTRATOR, "", {})
    assert event.seq == 2
    assert Ledger(path).verify().ok


def test_writer_keeps_count_and_head(path: Path) -> None:
    fill(path, 3)
    ledger = Ledger.open_for_writing(path)
    assert ledger.count == 3
    assert ledger.head == sha(lines_of(path)[-1])
    event = ledger.append(EventType.STORY_MERGED, Actor.ORCHESTRATOR, "F1/S1", {})
    assert (ledger.count, ledger.head) == (4, event.hash)


def test_fresh_ledger_refuses_to_append_to_a_broken_chain(path: Path) -> None:
    fill(path, 3)
    lines = lines_of(path)
    del lines[1]
    write_lines(path, lines)
    with pytest.raises(LedgerCorrupt, match="line 2"):
        Ledger(path).append(EventType.TURN_STARTED, Actor.ROLE, "F1", {})
    assert len(lines_of(path)) == 2


def test_open_for_writing_refuses_a_broken_chain(path: Path) -> None:
    fill(path, 2)
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(LedgerCorrupt) as caught:
        Ledger.open_for_writing(path)
    assert caught.value.problems[0].fault is Fault.TORN


# A writer killed after the kernel wrote part of its line (a write to a file ends early, at a page
# boundary, when its writer gets SIGKILL): the real kill, after a real short write.
KILLED_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from consort.core.ledger import Actor, EventType, Ledger

path = Path(sys.argv[1])
real_write = os.write

def write_then_die(fd, data):
    if os.readlink(f"/proc/self/fd/{fd}") == str(path.resolve()):
        real_write(fd, data[:4096])
        os.kill(os.getpid(), signal.SIGKILL)
    return real_write(fd, data)

ledger = Ledger(path)
ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1/S1/T1", {"n": 1, "role": "driver"})
os.write = write_then_die
ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1/S1/T2", {"n": 2, "role": "x" * 9000})
"""


def test_an_append_killed_mid_write_is_finished_by_the_next_reader(path: Path) -> None:
    import signal
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(path)], check=False)
    assert done.returncode == -signal.SIGKILL
    assert not path.read_bytes().endswith(b"\n")  # the kill left part of the second line
    report = Ledger(path).verify()
    assert report.problems == ()
    assert [e.data["n"] for e in report.events] == [1, 2]
    assert path.read_bytes().endswith(b"\n")
    after = Ledger(path).append(EventType.TURN_STARTED, Actor.ROLE, "F1/S1/T3", {"n": 3})
    assert after.seq == 3 and Ledger(path).verify().problems == ()


def test_a_truncated_line_is_still_torn_after_appends_that_finished(path: Path) -> None:
    """Only the append a kill interrupted is finished: the lock file forgets every append
    once its line is whole, so a line cut short later is reported."""
    fill(path, 2)
    path.write_bytes(path.read_bytes()[:-5])
    line, fault, _ = only_problem(path)
    assert (line, fault) == (2, Fault.TORN)


# ---- one writer per project --------------------------------------------------------------------


def test_hold_writer_refuses_a_second_holder(tmp_path: Path) -> None:
    state = tmp_path / ".consort"
    state.mkdir()
    with hold_writer(state):
        assert (state / "drive.lock").read_text().strip() == str(os.getpid())
        with pytest.raises(WriterBusy) as caught, hold_writer(state):
            pass
        assert caught.value.code == ExitCode.USAGE
        assert caught.value.pid == os.getpid()
        assert f"another `consort drive` is running on this project (pid {os.getpid()})" in str(
            caught.value
        )
    with hold_writer(state):  # released: free again
        pass
    assert (state / "drive.lock").read_text() == ""


def test_hold_writer_releases_when_the_block_raises(tmp_path: Path) -> None:
    state = tmp_path / ".consort"
    with pytest.raises(RuntimeError), hold_writer(state):
        raise RuntimeError("boom")
    with hold_writer(state):
        pass


# ---- consort log -------------------------------------------------------------------------------


def make_project(root: Path) -> Path:
    (root / ".consort").mkdir(parents=True)
    (root / "consort.toml").write_text("")
    ledger = Ledger(ledger_path(root / ".consort"))
    ledger.append(EventType.FEATURE_CREATED, Actor.ORCHESTRATOR, "F1", {"title": "stock"})
    ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1", {"role": "spec-author"})
    ledger.append(EventType.GATE_FROZEN, Actor.ORCHESTRATOR, "F1", {"gate": "design"})
    ledger.append(EventType.GATE_APPROVED, Actor.HUMAN, "F1", {"gate": "design"})
    ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1/S1/T1", {"role": "navigator"})
    ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F10", {"role": "spec-author"})
    return root


def run_log(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(root)
    result = CliRunner().invoke(cli, ["log", *args])
    return result.exit_code, result.stdout, result.stderr


def test_log_json_prints_every_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path / "p")
    code, out, _ = run_log(root, monkeypatch, "--json")
    assert code == 0
    printed = json.loads(out)
    assert [e["seq"] for e in printed] == [1, 2, 3, 4, 5, 6]
    assert printed[3] == json.loads(lines_of(ledger_path(root / ".consort"))[3])


@pytest.mark.parametrize(
    ("args", "seqs"),
    [
        (["--feature", "F1"], [1, 2, 3, 4, 5]),  # F1 and F1/..., not F10
        (["--role", "spec-author"], [2, 6]),
        (["--type", "gate"], [3, 4]),
        (["--type", "gate.approved"], [4]),
        (["--type", "turn.started", "--feature", "F1"], [2, 5]),
        (["--limit", "2"], [5, 6]),
        (["--feature", "F2"], []),
    ],
)
def test_log_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], seqs: list[int]
) -> None:
    root = make_project(tmp_path / "p")
    code, out, _ = run_log(root, monkeypatch, "--json", *args)
    assert code == 0
    assert [e["seq"] for e in json.loads(out)] == seqs


def test_log_prints_a_readable_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_project(tmp_path / "p")
    code, out, _ = run_log(root, monkeypatch, "--type", "gate")
    assert code == 0
    rows = [line for line in out.splitlines() if "gate." in line]
    assert len(rows) == 2
    assert "gate.frozen" in rows[0] and "gate=design" in rows[0] and "orchestrator" in rows[0]
    assert "gate.approved" in rows[1] and "human" in rows[1]


def test_log_of_a_broken_ledger_prints_what_it_can_and_exits_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p")
    path = ledger_path(root / ".consort")
    lines = lines_of(path)
    del lines[2]
    write_lines(path, lines)
    code, out, err = run_log(root, monkeypatch, "--json")
    assert code == ExitCode.INTEGRITY
    assert [e["seq"] for e in json.loads(out)] == [1, 2, 4, 5, 6]
    assert "line 3" in err
    assert "does not verify" in err


def test_log_of_an_empty_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "p"
    (root / ".consort").mkdir(parents=True)
    (root / "consort.toml").write_text("")
    code, out, _ = run_log(root, monkeypatch)
    assert code == 0
    assert "the ledger is empty" in out


def test_log_outside_a_project_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run_log(tmp_path, monkeypatch)
    assert code == ExitCode.USAGE
    assert "no Consort project" in err


def test_select_by_feature_matches_the_feature_and_what_is_under_it() -> None:
    def event(subject: str) -> Event:
        return Event(1, datetime.now(UTC), EventType.TURN_STARTED, Actor.ROLE, subject, {}, GENESIS)

    subjects = ["F1", "F1/S1", "F1/S1/T3", "F10", "F10/S1", "", "XF1"]
    chosen = select([event(s) for s in subjects], feature="F1")
    assert [e.subject for e in chosen] == ["F1", "F1/S1", "F1/S1/T3"]


def test_summary_is_one_cut_line() -> None:
    assert summary({"b": [1, 2], "a": "x\ny"}) == "a=x y b=[1, 2]"
    long = summary({"k": "v" * 500}, width=40)
    assert len(long) == 40 and long.endswith("…")


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-01T10:30:40.123456Z",
        "2024-02-29T23:59:59.999999Z",
        "2026-12-01T10:30:40.000000Z",
        "2023-02-29T10:30:40.000000Z",  # no such day
        "2026-13-01T10:30:40.000000Z",
        "2026-12-01T24:00:00.000000Z",
        "2026-12-01T10:30:60.000000Z",
        "2026-12-01T10:30:40.1Z",  # shapes only strptime reads
        "2026-1-1T1:2:3.5Z",
        "2026-12-01T10:30:40Z",
        "2026-12-01 10:30:40.000000Z",
        "2026-12-01T10:30:40.123456+00:00",
        "٢٠٢٦-12-01T10:30:40.123456Z",
        "",
    ],
)
def test_event_times_read_as_strptime_reads_them(text: str) -> None:
    from consort.core.ledger.chain import TIME_FORMAT, format_time, parse_time

    try:
        expected: datetime | type[ValueError] = datetime.strptime(text, TIME_FORMAT).replace(
            tzinfo=UTC
        )
    except ValueError:
        expected = ValueError
    try:
        got: datetime | type[ValueError] = parse_time(text)
    except ValueError:
        got = ValueError
    assert got == expected
    assert parse_time(format_time(datetime(2026, 12, 1, 10, 30, 40, 7, tzinfo=UTC))) == datetime(
        2026, 12, 1, 10, 30, 40, 7, tzinfo=UTC
    )


def test_a_recorded_event_holds_no_password_written_into_a_url(path: Path) -> None:
    """What Consort records may quote a process's output, and the ledger is committed with the
    evidence: a login's password in a URL is never written there."""
    from consort.core.ledger.events import DriveStopped

    message = (
        "the migrations failed: cannot reach "
        "postgresql://feature_user:2ff8f252942b0c7f@127.0.0.1:5432/feature and "
        "postgres://main_user:p%40ss@localhost/main; see https://example.com/a:b@c"
    )
    event = Ledger(path).record(
        DriveStopped(reason="error", message=message), Actor.ORCHESTRATOR, "F1"
    )
    stored = path.read_text()
    assert "2ff8f252942b0c7f" not in stored and "p%40ss" not in stored
    assert event.data["message"] == (
        "the migrations failed: cannot reach "
        "postgresql://feature_user:***@127.0.0.1:5432/feature and "
        "postgres://main_user:***@localhost/main; see https://example.com/a:b@c"
    )
    assert Ledger(path).verify().ok
