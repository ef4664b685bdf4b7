"""`kill -9` of `consort drive` at any moment leaves a state from which `consort verify` passes
and the next `drive` reaches the same end as a run that was never interrupted.

All features live in one project; the first is driven without interruption and is the baseline
the others are compared with (the accepted hash of every design artifact, and the files).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from consort.core.ledger import EventType
from tests.helpers import consort
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_design_lane import (
    DESIGN,
    STEPS,
    Agent,
    accepted_hashes,
    events,
    expect,
    feature_dir,
    fixture_hashes,
    intake,
    of_type,
    run,
    short,
    verified,
    write_config,
)

pytestmark = pytest.mark.integration


KILLED = -signal.SIGKILL


@dataclass
class Crashable:
    root: Path
    agent: Agent
    baseline: dict[str, str]  # artifact kind -> accepted hash of the uninterrupted run
    baseline_key: str

    def same_end_state(self, key: str) -> None:
        """At the design gate, with what the uninterrupted run accepted, byte for byte."""
        assert accepted_hashes(self.root, key) == self.baseline
        for kind in DESIGN:
            ours = feature_dir(self.root, key) / f"{kind}.json"
            theirs = feature_dir(self.root, self.baseline_key) / f"{kind}.json"
            assert ours.read_bytes() == theirs.read_bytes(), kind
        nxt = expect(run(self.root, "next", "--feature", short(key)), 0)
        assert "await-gate" in nxt

    def start_drive(self, key: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "consort", "drive", "--feature", short(key)],
            cwd=self.root,
            env=dict(os.environ, COLUMNS="200"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def drive_killed_on_request(self, key: str) -> int:
        """Run `drive`, SIGKILLing it when its agent asks (a sandboxed agent cannot reach it):
        the drive's exit status."""
        request = self.agent.control / "kill-drive"
        request.unlink(missing_ok=True)
        drive = self.start_drive(key)
        try:
            while drive.poll() is None:
                if request.exists():
                    drive.send_signal(signal.SIGKILL)
                    break
                time.sleep(0.02)
            drive.communicate(timeout=60)
        finally:
            request.unlink(missing_ok=True)
        return drive.returncode

    def no_agent_left(self, within_s: float = 10) -> None:
        """Every process of the turn ended with the drive: none needs stopping by hand."""
        deadline = time.monotonic() + within_s
        while self.agent.processes():
            assert time.monotonic() < deadline, f"left running: {self.agent.processes()}"
            time.sleep(0.05)

    def after_crash(self) -> None:
        """What a person finds after the crash: leftover agents stopped, everything verifies."""
        self.agent.stop_leftovers()
        verified(self.root)


@pytest.fixture(scope="module")
def crashable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crashable]:
    base = tmp_path_factory.mktemp("crash")
    root = base / "app"
    expect(consort("init", str(root), cwd=base), 0)
    agent = Agent(base / "agent")
    write_config(root, agent.settings)
    try:
        key = intake(root, "Never interrupted")
        out = expect(run(root, "drive", "--feature", short(key)), 0)
        assert f"consort approve design {key}" in out
        baseline = accepted_hashes(root, key)
        assert baseline == fixture_hashes(DESIGN)
        yield Crashable(root, agent, baseline, key)
    finally:
        agent.stop_leftovers()
        destroy_project_cluster(root)


def test_killed_inside_every_turn_then_resumed(crashable: Crashable) -> None:
    """`drive` is SIGKILLed during its agent's first call at each step: before the agent wrote
    its output at some steps, right after it (the turn's work is done, Consort has not seen it
    yet) at the others. The agent goes with it each time."""
    root, agent = crashable.root, crashable.agent
    key = intake(root, "Killed by its agent")
    kills = dict(zip(STEPS, ["kill-before", "kill-after"] * 3, strict=False))
    for step, how in kills.items():
        agent.plan(key, step, how)

    crashes = 0
    for _ in range(2 * len(STEPS) + 1):
        code = crashable.drive_killed_on_request(key)
        if code != KILLED:
            break
        crashes += 1
        crashable.no_agent_left()
        verified(root)
    assert code == 0
    assert crashes == len(STEPS)
    for step in STEPS:
        assert agent.calls(key, step) == 2, step  # the killed call, and the one after resuming

    crashable.same_end_state(key)
    started = of_type(root, EventType.TURN_STARTED, key)
    ended = {
        str(e.data["turn"])
        for e in events(root)
        if e.subject == key and e.type in (EventType.TURN_FINISHED, EventType.TURN_FAILED)
    }
    interrupted = [str(e.data["step"]) for e in started if str(e.data["turn"]) not in ended]
    assert interrupted == list(STEPS)  # each crash left one turn without an end, and no harm
    assert not of_type(root, EventType.TURN_FAILED, key)
    verified(root)


def test_killed_at_moments_on_the_clock_then_resumed(crashable: Crashable) -> None:
    """SIGKILL from outside after growing delays: in a turn, between turns, while deriving."""
    root, agent = crashable.root, crashable.agent
    key = intake(root, "Killed on the clock")
    for step in STEPS:
        agent.plan(key, step, "sleep:0.2")

    outcomes = []
    for delay in (0.1, 0.3, 0.5, 0.7, 0.9, 1.1, 1.3):
        drive = crashable.start_drive(key)
        try:
            drive.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            drive.send_signal(signal.SIGKILL)
        drive.communicate(timeout=60)
        outcomes.append(drive.returncode)
        crashable.after_crash()
        if drive.returncode == 0:
            break
    assert KILLED in outcomes
    if outcomes[-1] != 0:
        expect(run(root, "drive", "--feature", short(key)), 0)
    crashable.same_end_state(key)
    verified(root)


def test_crash_between_the_ledger_and_the_copy(crashable: Crashable) -> None:
    """The ledger accepts the architecture, then the copy into the feature folder fails (a
    folder is in the way): the state a crash at exactly that point leaves. Once the obstacle is
    gone, `drive` restores the accepted output without running the architect again."""
    root, agent = crashable.root, crashable.agent
    key = intake(root, "Crash before the copy")
    agent.plan(key, "architecture", "wait-for-go")
    drive = crashable.start_drive(key)
    try:
        agent.wait_until_waiting(key, "architecture")
        obstacle = feature_dir(root, key) / "architecture.json"
        obstacle.mkdir()  # empty: git does not see it, so the turn's scope check passes
    finally:
        agent.go(key, "architecture")
        out, _ = drive.communicate(timeout=60)
    assert drive.returncode == 1, out
    accepted = [e.data["kind"] for e in of_type(root, EventType.ARTIFACT_ACCEPTED, key)]
    assert accepted == ["feature-spec", "architecture"]
    obstacle.rmdir()
    crashable.after_crash()
    assert "restore-artifact" in expect(run(root, "next", "--feature", short(key)), 0)

    out = expect(run(root, "drive", "--feature", short(key)), 0)
    assert "accepted but not written" in out
    assert agent.calls(key, "architecture") == 1
    crashable.same_end_state(key)
    verified(root)


def test_kill_9_of_drive_leaves_no_process_of_the_turn_alive(crashable: Crashable) -> None:
    """A killed `drive` takes its agent's sandbox with it (--die-with-parent and a PID namespace),
    so no orphan finishes its work later, in an abandoned turn or anywhere else."""
    root, agent = crashable.root, crashable.agent
    key = intake(root, "Orphaned agent")
    agent.plan(key, "spec", "wait-for-go")
    drive = crashable.start_drive(key)
    agent.wait_until_waiting(key, "spec")
    assert agent.processes()  # the agent, in its sandbox
    drive.send_signal(signal.SIGKILL)
    drive.communicate(timeout=60)
    assert drive.returncode == KILLED
    crashable.no_agent_left()
    agent.go(key, "spec")  # nobody is left to act on it
    orphan_turn = of_type(root, EventType.TURN_STARTED, key)[-1].data["turn"]
    output = root / ".consort" / "turns" / str(orphan_turn) / "outputs" / "feature-spec.json"
    time.sleep(0.5)
    assert not output.exists()
    verified(root)
    expect(run(root, "drive", "--feature", short(key)), 0)
    assert agent.calls(key, "spec") == 2
    crashable.same_end_state(key)
    verified(root)


def test_ctrl_c_stops_at_a_safe_point_and_stops_the_agent(crashable: Crashable) -> None:
    root, agent = crashable.root, crashable.agent
    key = intake(root, "Interrupted by a person")
    agent.plan(key, "architecture", "wait-for-go")
    drive = crashable.start_drive(key)
    try:
        agent.wait_until_waiting(key, "architecture")
        drive.send_signal(signal.SIGINT)  # what Ctrl-C sends to the foreground process
        out, _ = drive.communicate(timeout=60)
    finally:
        agent.go(key, "architecture")
    assert drive.returncode == 130, out  # interrupted: 128 + SIGINT, whichever signal
    assert "interrupted" in out and "resumes" in out
    last = [e for e in events(root) if e.subject == key][-1]
    assert last.type is EventType.DRIVE_STOPPED
    assert last.data["reason"] == "interrupted"
    crashable.no_agent_left()
    verified(root)
    expect(run(root, "drive", "--feature", short(key)), 0)
    assert agent.calls(key, "architecture") == 2
    crashable.same_end_state(key)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_drive_as_ctrl_c_does(
    crashable: Crashable, stop: signal.Signals
) -> None:
    """A service manager's stop, or a closed terminal: the turn's sandbox is torn down, the
    attempt is not counted, the message says how to resume, and no process is left."""
    root, agent = crashable.root, crashable.agent
    key = intake(root, f"Stopped by {stop.name}")
    agent.plan(key, "db-design", "wait-for-go")
    drive = crashable.start_drive(key)
    try:
        agent.wait_until_waiting(key, "db-design")
        drive.send_signal(stop)
        out, _ = drive.communicate(timeout=60)
    finally:
        agent.go(key, "db-design")
    assert drive.returncode == 130, out  # interrupted: 128 + SIGINT, whichever signal
    assert f"interrupted ({stop.name})" in out and "`consort drive` resumes" in out
    crashable.no_agent_left()
    last = [e for e in events(root) if e.subject == key][-1]
    assert last.type is EventType.DRIVE_STOPPED
    assert (last.data["reason"], last.data["message"]) == ("interrupted", f"stopped by {stop.name}")
    assert not of_type(root, EventType.TURN_FAILED, key)  # the attempt was not used up
    verified(root)
    expect(run(root, "drive", "--feature", short(key)), 0)
    assert agent.calls(key, "db-design") == 2
    started = [
        e for e in of_type(root, EventType.TURN_STARTED, key) if e.data["step"] == "db-design"
    ]
    assert [e.data["attempt"] for e in started] == [1, 1]
    assert {e.data["sandbox"] for e in of_type(root, EventType.TURN_STARTED, key)} == {"bwrap"}
    crashable.same_end_state(key)
