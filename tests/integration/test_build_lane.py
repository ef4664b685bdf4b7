"""The build lane end to end: real git worktrees, real PostgreSQL branches, real pytest runs, and
command agents written for the tests (tests/agents/tdd_agent.py) that do their job or misbehave
in one named way each."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import (
    MINI,
    MINI_FEATURE,
    TDD_AGENT,
    consort,
    events,
    git,
    ok,
    start_mini_project,
)
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

STORY = "S1-answers"


def _agent(mode: str) -> str:
    return json.dumps([sys.executable, str(TDD_AGENT), str(MINI), mode])


def configure(
    root: Path,
    *,
    navigator: str = "honest",
    driver: str = "honest",
    reviewer: str | None = None,
    repair_attempts: int = 1,
) -> None:
    """Rewrite consort.toml: proxy gates, pytest from this interpreter, agents in these modes."""
    text = f"""
[test]
command = {json.dumps([sys.executable, "-m", "pytest", "-q"])}
[migrate]
command = []
[gates]
mode = "proxy"
[build]
repair_attempts = {repair_attempts}
[turns]
retries = 1
[agents]
default = "command"
command = {_agent("honest")}
[agents.navigator]
adapter = "command"
command = {_agent(reviewer or navigator)}
[agents.driver]
adapter = "command"
command = {_agent(driver)}
"""
    (root / "consort.toml").write_text(text)


def verify_ok(root: Path) -> None:
    result = consort("verify", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr


def red_commit(root: Path, item: str) -> str:
    return next(
        e["data"]["commit"]
        for e in reversed(events(root))
        if e["type"] == "red.verified" and e["subject"].endswith(f"/{item}")
    )


def protected_unchanged_on_heads(root: Path, item: str) -> None:
    """No protected file on any branch head differs from its version at the item's RED."""
    red = red_commit(root, item)
    for branch in git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split():
        changed = git(
            root,
            "diff",
            "--name-only",
            red,
            branch,
            "--",
            "tests",
            "conftest.py",
            ":(glob)**/conftest.py",
            "pytest.ini",
            "setup.cfg",
            "tox.ini",
        )
        if branch.startswith("story/"):
            assert changed == "", f"{branch} changed protected files: {changed}"


def _new_project(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    root = tmp_path_factory.mktemp(name) / "counter"
    start_mini_project(root, configure)
    return root


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project whose T1 has a verified RED, so each test can send a misbehaving driver."""
    root = _new_project(tmp_path_factory, "guarded")
    try:
        configure(root, driver="noop")
        result = consort("drive", cwd=root)
        assert result.returncode == 3, result.stdout + result.stderr  # the noop driver escalates
        yield root
    finally:
        destroy_project_cluster(root)


def attempt_green(root: Path, mode: str) -> list[dict]:
    """Resolve the open escalation, drive with a driver in `mode`; the new events."""
    configure(root, driver=mode)
    before = len(events(root))
    status = json.loads(ok(consort("status", "--json", cwd=root)))
    if status["escalations"]:
        ok(consort("retry", "F1", "--note", f"try as {mode}", cwd=root))
    result = consort("drive", cwd=root)
    assert result.returncode == 3, result.stdout + result.stderr
    assert (
        "escalation" in result.stdout + result.stderr or "failed" in result.stdout + result.stderr
    )
    return events(root)[before:]


def _failures(new: list[dict]) -> list[str]:
    return [r for e in new if e["type"] == "green.failed" for r in e["data"]["reasons"]]


def _violations(new: list[dict]) -> set[str]:
    return {e["data"]["path"] for e in new if e["type"] == "violation.recorded"}


@pytest.mark.parametrize(
    ("mode", "violated"),
    [
        ("edits-test", "tests/test_t1.py"),
        ("deletes-test", "tests/test_t1.py"),
        ("adds-skip", "tests/test_t1.py"),
        ("adds-conftest", "conftest.py"),
        ("only-tests", "tests/test_t1.py"),
    ],
)
def test_driver_touching_protected_paths_is_reverted_and_fails(guarded, mode, violated):
    new = attempt_green(guarded, mode)
    assert violated in _violations(new)
    assert any("may not change" in r for r in _failures(new))
    assert not any(e["type"] == "green.verified" for e in new)
    assert any(e["type"] == "escalation.raised" for e in new)
    verify_ok(guarded)
    protected_unchanged_on_heads(guarded, "T1")
    worktree = guarded / ".consort" / "worktrees" / MINI_FEATURE / STORY
    assert not (worktree / "conftest.py").exists()
    assert (worktree / "tests" / "test_t1.py").read_text().count("== 42") == 1


def test_driver_that_changes_nothing_fails(guarded):
    new = attempt_green(guarded, "noop")
    assert any("no code was changed" in r for r in _failures(new))
    verify_ok(guarded)


def test_repair_loop_then_escalation_with_the_runner_output(tmp_path_factory):
    root = _new_project(tmp_path_factory, "repair")
    try:
        # honest at T1; at T2 it makes the new test pass by breaking T1's
        configure(root, driver="breaks-earlier", repair_attempts=2)
        result = consort("drive", cwd=root)
        assert result.returncode == 3, result.stdout + result.stderr
        failed = [e for e in events(root) if e["type"] == "green.failed"]
        assert [e["data"]["step"] for e in failed] == ["green", "repair", "repair"]
        assert all(
            "tests/test_t1.py::test_answer failed" in " ".join(e["data"]["reasons"]) for e in failed
        )
        repair_task = (
            sorted((root / ".consort" / "turns").glob("*-driver-repair"))[-1] / "task.json"
        )
        feedback = json.loads(repair_task.read_text())["feedback"]
        assert "test_answer" in feedback and "41" in feedback  # the runner's own output
        status = json.loads(ok(consort("status", "--json", cwd=root)))
        assert status["escalations"] and "consort retry" in status["escalations"][0]["command"]
        verify_ok(root)
        # a person steps in: the honest driver repairs it and the story completes
        configure(root)
        ok(consort("retry", "F1", "--note", "keep answer() at 42", cwd=root))
        result = consort("drive", "--until", "build", cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "reached the end of the build lane" in result.stdout
        verify_ok(root)
    finally:
        destroy_project_cluster(root)


def test_honest_pair_completes_the_story_with_a_refactor(tmp_path_factory):
    root = _new_project(tmp_path_factory, "honest")
    try:
        configure(root, reviewer="review-refactor")
        result = consort("drive", "--until", "build", cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        kinds = [e["type"] for e in events(root)]
        for kind in (
            "red.verified",
            "green.verified",
            "review.recorded",
            "refactor.verified",
            "story.merged",
        ):
            assert kind in kinds, kind
        assert kinds.count("red.verified") == 2 and kinds.count("green.verified") == 2
        feature_log = git(root, "log", "--format=%s", f"feature/{MINI_FEATURE}")
        assert re.search(r"RED T1.*\n.*", feature_log)
        for subject in ("RED T1", "GREEN T1", "REFACTOR T1", "RED T2", "GREEN T2", "Merge story"):
            assert subject in feature_log, subject
        cycle = json.loads(
            (root / ".consort" / "cycles" / MINI_FEATURE / STORY / "T1" / "cycle.json").read_text()
        )
        assert {"red", "green", "review", "refactor"} <= set(cycle["stages"])
        green = next(e for e in events(root) if e["type"] == "green.verified")
        run = green["data"]["run"]
        # the run's child is named like a branch database of its parent: no marker of a run
        assert run["database"] != run["parent_database"]
        assert run["database"][:-8] == run["parent_database"][:-8]
        assert "eph" not in run["database"] and "consort" not in run["database"]
        assert run["report_sha256"] and run["counts"]["passed"] >= 1
        verify_ok(root)
        protected_unchanged_on_heads(root, "T2")
        # every ephemeral database was dropped
        rows = json.loads(ok(consort("branch", "list", "--json", cwd=root)))
        names = {r["name"] for r in rows}
        assert {"main", f"feature/{MINI_FEATURE}", f"story/{MINI_FEATURE}/{STORY}"} <= names
    finally:
        destroy_project_cluster(root)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("red-passes", "passed before any code was written"),
        ("red-wrong-kind", "where assertion was declared"),
        ("red-asserts-nothing", "asserts nothing"),
        ("red-asserts-not-none", "asserts nothing that can fail"),
        ("red-swallows-assertion", "asserts nothing that can fail"),
        ("red-asserts-a-tuple", "asserts nothing that can fail"),
        ("red-asserts-a-list", "asserts nothing that can fail"),
        ("red-checks-after-return", "asserts nothing that can fail"),
        ("red-checks-in-uncalled-function", "asserts nothing that can fail"),
        ("red-returns-before-check", "asserts nothing that can fail"),
        ("red-expects-the-assertion-to-fail", "asserts nothing that can fail"),
        ("red-suppresses-assertion", "asserts nothing that can fail"),
        ("red-checks-its-own-stand-in", "asserts nothing that can fail"),
    ],
)
def test_a_red_that_does_not_fail_as_declared_is_rejected(tmp_path_factory, mode, reason):
    root = _new_project(tmp_path_factory, mode)
    try:
        configure(root, navigator=mode)
        result = consort("drive", cwd=root)
        assert result.returncode == 3, result.stdout + result.stderr
        failed = [e for e in events(root) if e["type"] == "red.failed"]
        assert len(failed) == 2  # the first attempt and one retry
        assert all(any(reason in r for r in e["data"]["reasons"]) for e in failed)
        assert not any(e["type"] == "red.verified" for e in events(root))
        worktree = root / ".consort" / "worktrees" / MINI_FEATURE / STORY
        assert git(worktree, "log", "--format=%s", "-1").startswith("Merge") is False
        assert "RED" not in git(worktree, "log", "--format=%s")  # the failed RED commits are gone
        verify_ok(root)
    finally:
        destroy_project_cluster(root)


def test_an_approved_amendment_changes_the_test_with_before_and_after_hashes(tmp_path_factory):
    root = _new_project(tmp_path_factory, "amend")
    try:
        configure(root, driver="noop")
        assert consort("drive", cwd=root).returncode == 3
        worktree = root / ".consort" / "worktrees" / MINI_FEATURE / STORY
        refused = consort("amend", "F1/S1/T1", "--note", "nothing changed", cwd=root)
        assert refused.returncode == 2 and "no test was changed" in refused.stderr
        test_file = worktree / "tests" / "test_t1.py"
        test_file.write_text(test_file.read_text().replace("== 42", "== 6 * 7"))
        ok(consort("amend", "F1/S1/T1", "--note", "spell the answer out", cwd=root))
        amendment = next(e for e in events(root) if e["type"] == "amendment.approved")
        change = amendment["data"]["files"]["tests/test_t1.py"]
        assert change["before"] and change["after"] and change["before"] != change["after"]
        configure(root)
        result = consort("drive", "--until", "build", cwd=root)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "6 * 7" in git(root, "show", f"feature/{MINI_FEATURE}:tests/test_t1.py")
        verify_ok(root)
    finally:
        destroy_project_cluster(root)
