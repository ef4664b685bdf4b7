"""An unsandboxed turn's or run's process that outlives it, to approve the gate the person must.

With `[agents] sandbox = "off"` a turn's processes are the person's user: one left running after
the turn answers `consort approve design` at a terminal of its own exactly as the person would.
The spec author (lingering_agent.py) leaves one that has left the turn's process group and
session and carries none of Consort's variables. Every process a turn started is still Consort's
descendant (Consort reaps its orphans while an unsandboxed turn runs), so it ends with the turn,
and the turn fails with a `process-escaped` violation. The navigator's does it from the test it
writes, in Consort's own RED run: the same holds for a run that is not sandboxed. Real project:
the embedded PostgreSQL, real git, interactive gates.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import (
    MINI_FEATURE,
    configure_cheat,
    consort,
    events,
    ok,
    processes_naming,
    start_mini_project,
)
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_design_lane import approve_at_terminal

pytestmark = pytest.mark.integration

LINGERING = Path(__file__).parent / "lingering_agent.py"


def configure(root: Path, marker: str, role: str = "spec-author") -> None:
    as_navigator = ["navigator"] if role == "navigator" else []
    configure_cheat(root, marker, role, LINGERING, MINI_FEATURE, *as_navigator, sandbox="off")


@pytest.fixture(scope="module")
def lingered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("linger") / "counter"
    marker = f"linger-{uuid.uuid4().hex[:12]}"
    try:
        start_mini_project(root, lambda root: configure(root, marker))
        stopped = consort("drive", "--until", "design", cwd=root, timeout=600)
        assert stopped.returncode == 0, stopped.stdout + stderr_of(stopped)
        assert f"consort approve design {MINI_FEATURE}" in stopped.stdout
        time.sleep(8)  # several of the lingering process's attempts, were it alive
        yield root, marker
    finally:
        for pid in processes_naming(marker):  # only if it outlived its turn; the test says so
            os.kill(pid, 9)
        destroy_project_cluster(root)


def stderr_of(result: object) -> str:
    return str(getattr(result, "stderr", ""))


def test_the_process_left_behind_ended_with_its_turn(lingered: tuple[Path, str]) -> None:
    _, marker = lingered
    assert processes_naming(marker) == []


def test_the_design_gate_still_waits_for_the_person(lingered: tuple[Path, str]) -> None:
    root, _ = lingered
    assert [e for e in events(root) if e["type"] == "gate.approved"] == []
    status = json.loads(ok(consort("status", "--json", cwd=root)))
    (feature,) = [f for f in status["features"] if f["id"] == MINI_FEATURE]
    assert feature["design_gate"] != "approved", feature


def test_the_turn_that_left_it_failed_on_record(lingered: tuple[Path, str]) -> None:
    root, _ = lingered
    recorded = events(root)
    escaped = [
        e
        for e in recorded
        if e["type"] == "violation.recorded" and e["data"].get("seal_rule") == "process-escaped"
    ]
    assert escaped, [e["type"] for e in recorded]
    (first_spec,) = [
        e
        for e in recorded
        if e["type"] in ("turn.finished", "turn.failed")
        and e["data"].get("step") == "spec"
        and e["data"].get("attempt") == 1
    ]
    assert first_spec["type"] == "turn.failed", first_spec
    assert any("left" in error and "running" in error for error in first_spec["data"]["errors"])
    # The retry was honest; the drive went on to the gate, where it waits.
    assert recorded[-1]["type"] == "drive.stopped"
    assert recorded[-1]["data"]["reason"] == "await-gate"


@pytest.fixture(scope="module")
def lingered_from_a_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("linger-run") / "counter"
    marker = f"linger-{uuid.uuid4().hex[:12]}"
    try:
        start_mini_project(root, lambda root: configure(root, marker, role="navigator"))
        ok(consort("drive", "--until", "design", cwd=root, timeout=600))
        code, said = approve_at_terminal(root, MINI_FEATURE)
        assert code == 0, said
        consort("drive", cwd=root, timeout=900)  # the build, as far as it goes
        time.sleep(8)  # several of the lingering process's attempts, were it alive
        yield root, marker
    finally:
        for pid in processes_naming(marker):  # only if it outlived its run; the test says so
            os.kill(pid, 9)
        destroy_project_cluster(root)


def test_a_process_a_run_left_behind_ended_with_it_and_the_story_gate_waits(
    lingered_from_a_run: tuple[Path, str],
) -> None:
    root, marker = lingered_from_a_run
    assert processes_naming(marker) == []
    recorded = events(root)
    story_approvals = [
        e for e in recorded if e["type"] == "gate.approved" and e["data"]["gate"] == "story"
    ]
    assert story_approvals == []
    escaped = [
        e
        for e in recorded
        if e["type"] == "violation.recorded"
        and e["data"].get("seal_rule") == "process-escaped"
        and e["data"].get("run")
    ]
    assert escaped, [e["type"] for e in recorded]
    # The navigator's retry was honest: the build went on to the story gate, where it waits.
    assert recorded[-1]["type"] == "drive.stopped"
    assert recorded[-1]["data"]["reason"] == "await-gate"
