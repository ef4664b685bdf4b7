"""The ledger and the writer lock across real processes."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from consort.adapters.proc import run
from consort.core.drive_lock import WriterBusy, hold_writer
from consort.core.errors import ExitCode
from consort.core.ledger import Actor, EventType, Ledger, ledger_path

pytestmark = pytest.mark.integration

CHILD_TIMEOUT = 120.0


def python(script: str, *args: str | Path, timeout: float = CHILD_TIMEOUT) -> tuple[int, str, str]:
    result = run(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
        timeout=timeout,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


def spawn(script: str, *args: str | Path) -> subprocess.Popen[str]:
    """A long-lived child that talks over its stdin and stdout, one line at a time."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def expect_line(child: subprocess.Popen[str], expected: str) -> None:
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if line != expected:
        child.kill()
        _, err = child.communicate(timeout=CHILD_TIMEOUT)
        pytest.fail(f"child said {line!r}, expected {expected!r}; stderr: {err}")


def tell(child: subprocess.Popen[str], text: str) -> None:
    assert child.stdin is not None
    child.stdin.write(text + "\n")
    child.stdin.flush()


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    state = tmp_path / ".consort"
    state.mkdir()
    yield state


APPENDER = """
    import sys
    from pathlib import Path
    from consort.core.ledger import Ledger

    path, writer, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    for n in range(count):
        # A fresh object per append: each adopts what the other process wrote since.
        Ledger(path).append("turn.started", "role", f"F1/{writer}", {"writer": writer, "n": n})
"""


def test_two_processes_appending_at_once_build_one_valid_chain(state_dir: Path) -> None:
    path = ledger_path(state_dir)
    children = [spawn(APPENDER, path, name, "200") for name in ("a", "b")]
    for child in children:
        expect_line(child, "ready")
    for child in children:
        tell(child, "go")
    for child in children:
        _, err = child.communicate(timeout=CHILD_TIMEOUT)
        assert child.returncode == 0, err

    report = Ledger(path).verify()
    assert report.ok, [str(p) for p in report.problems]
    events = Ledger(path).read()
    assert [e.seq for e in events] == list(range(1, 401))
    for writer in ("a", "b"):
        mine = [e.data["n"] for e in events if e.data["writer"] == writer]
        assert mine == list(range(200)), f"writer {writer} lost or reordered events"
    # Both really ran at once: their events interleave rather than forming two blocks.
    writers = [e.data["writer"] for e in events]
    switches = sum(1 for x, y in itertools.pairwise(writers) if x != y)
    assert switches > 1


HOLDER = """
    import sys
    from pathlib import Path
    from consort.core.drive_lock import hold_writer

    with hold_writer(Path(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.readline()
    print("released", flush=True)
"""

CONTENDER = """
    import sys
    from pathlib import Path
    from consort.core.errors import ConsortError
    from consort.core.drive_lock import hold_writer

    try:
        with hold_writer(Path(sys.argv[1])):
            print("got it", flush=True)
    except ConsortError as exc:
        print(exc.message, file=sys.stderr)
        sys.exit(int(exc.code))
"""


def test_second_writer_in_another_process_is_refused(state_dir: Path) -> None:
    with hold_writer(state_dir):
        code, out, err = python(CONTENDER, state_dir)
        assert code == ExitCode.USAGE
        assert out == ""
        assert f"another `consort drive` is running on this project (pid {os.getpid()})" in err
    code, out, _ = python(CONTENDER, state_dir)
    assert code == 0
    assert out.strip() == "got it"


def test_writer_held_by_another_process_is_refused_here(state_dir: Path) -> None:
    child = spawn(HOLDER, state_dir)
    try:
        expect_line(child, "held")
        with pytest.raises(WriterBusy) as caught, hold_writer(state_dir):
            pass
        assert caught.value.pid == child.pid
        assert caught.value.code == ExitCode.USAGE
        tell(child, "done")
        expect_line(child, "released")
        assert child.wait(timeout=CHILD_TIMEOUT) == 0
        with hold_writer(state_dir):
            pass
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=CHILD_TIMEOUT)


def test_writer_killed_with_sigkill_frees_the_lock(state_dir: Path) -> None:
    child = spawn(HOLDER, state_dir)
    try:
        expect_line(child, "held")
        code, _, err = python(CONTENDER, state_dir)
        assert code == ExitCode.USAGE
        assert f"(pid {child.pid})" in err
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=CHILD_TIMEOUT)
    assert child.returncode == -signal.SIGKILL
    code, out, _ = python(CONTENDER, state_dir)
    assert code == 0, "the lock of a killed writer must be free"
    assert out.strip() == "got it"
    with hold_writer(state_dir):
        pass


WRITER = """
    import sys
    from pathlib import Path
    from consort.core.errors import ConsortError
    from consort.core.ledger import Ledger

    ledger = Ledger.open_for_writing(Path(sys.argv[1]))
    try:
        while sys.stdin.readline().strip() == "append":
            event = ledger.append("turn.finished", "orchestrator", "F1", {})
            print(f"appended {event.seq}", flush=True)
    except ConsortError as exc:
        print(exc.message, file=sys.stderr)
        sys.exit(int(exc.code))
"""


@pytest.mark.parametrize("change", ["foreign append", "edit", "truncate", "delete"])
def test_ledger_changed_by_another_process_stops_the_writer_with_exit_4(
    state_dir: Path, change: str
) -> None:
    path = ledger_path(state_dir)
    ledger = Ledger(path)
    for n in range(3):
        ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F1", {"n": n})
    child = spawn(WRITER, path)
    try:
        tell(child, "append")
        expect_line(child, "appended 4")
        changer = {
            "foreign append": """
                import sys
                from pathlib import Path
                from consort.core.ledger import Ledger
                Ledger(Path(sys.argv[1])).append("gate.approved", "human", "F1", {})
            """,
            "edit": """
                import os, sys
                from pathlib import Path
                path = Path(sys.argv[1])
                before = path.stat()
                path.write_bytes(path.read_bytes().replace(b'"n":1', b'"n":8'))
                os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
            """,
            "truncate": """
                import sys
                from pathlib import Path
                path = Path(sys.argv[1])
                path.write_bytes(b"".join(l + b"\\n" for l in path.read_bytes().split(b"\\n")[:2]))
            """,
            "delete": """
                import sys
                from pathlib import Path
                Path(sys.argv[1]).unlink()
            """,
        }[change]
        code, _, err = python(changer, path)
        assert code == 0, err
        tell(child, "append")
        _, err = child.communicate(timeout=CHILD_TIMEOUT)
        assert child.returncode == ExitCode.INTEGRITY, err
        assert "was changed by something other than Consort" in err
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=CHILD_TIMEOUT)
    if change == "foreign append":
        # The other process's append was valid: nothing but the writer's own next event is lost.
        assert [e.type for e in Ledger(path).read()][-1] is EventType.GATE_APPROVED


def make_project(root: Path) -> Path:
    (root / ".consort").mkdir(parents=True)
    (root / "consort.toml").write_text("")
    ledger = Ledger(ledger_path(root / ".consort"))
    ledger.append(EventType.FEATURE_CREATED, Actor.ORCHESTRATOR, "F1", {"title": "stock"})
    ledger.append(EventType.GATE_APPROVED, Actor.HUMAN, "F1", {"gate": "design"})
    ledger.append(EventType.TURN_STARTED, Actor.ROLE, "F2", {"role": "spec-author"})
    return root


def consort_log(root: Path, *args: str) -> tuple[int, str, str]:
    result = run(
        [sys.executable, "-m", "consort", "log", *args],
        cwd=root,
        timeout=CHILD_TIMEOUT,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


def test_consort_log_json_in_a_real_process(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    (root / "src").mkdir()
    code, out, err = consort_log(root / "src", "--json", "--feature", "F1")
    assert code == 0, err
    printed = json.loads(out)
    assert [(e["seq"], e["type"], e["actor"]) for e in printed] == [
        (1, "feature.created", "orchestrator"),
        (2, "gate.approved", "human"),
    ]
    lines = ledger_path(root / ".consort").read_bytes().splitlines()
    assert printed[1] == json.loads(lines[1])


def test_consort_log_of_a_tampered_ledger_exits_4(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    path = ledger_path(root / ".consort")
    path.write_bytes(path.read_bytes().replace(b"feature.created", b"feature.deleted"))
    code, out, err = consort_log(root, "--json")
    assert code == ExitCode.INTEGRITY
    assert [e["seq"] for e in json.loads(out)] == [2, 3]
    assert "line 1" in err
    code, out, err = consort_log(root)
    assert code == ExitCode.INTEGRITY
    assert "gate.approved" in out
    assert "does not verify" in err
