"""Re-proving every cycle from git objects and the stored test reports.

* At each GREEN and REFACTOR commit, the protected files (tests, test configuration) are
  byte-identical — the same blob ids — to the RED commit's.
* Every GREEN and REFACTOR names a run whose stored JUnit report still has the recorded hash and
  shows every test of the RED era passing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from consort.adapters.scope import glob_match
from consort.adapters.tdd.junit import ReportMissing, parse_report
from consort.adapters.tdd.runner import REPORT_FILE, runs_dir
from consort.adapters.vcs import Git
from consort.core.ledger import Event
from consort.core.ledger.events import (
    AmendmentApproved,
    GreenVerified,
    RedVerified,
    RefactorVerified,
    RunRecord,
)
from consort.core.project import Project


def protected_blobs(git: Git, commit: str, protected: Sequence[str]) -> dict[str, str]:
    """path -> blob id of every protected file in `commit`."""
    listing = git.run("ls-tree", "-r", "-z", commit).stdout
    blobs = {}
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        if any(glob_match(pattern, path) for pattern in protected):
            blobs[path] = meta.split()[2]
    return blobs


def verify_cycles(project: Project, events: Sequence[Event]) -> tuple[list[str], list[str]]:
    """(what holds, what does not)."""
    holds: list[str] = []
    fails: list[str] = []
    git = Git(project.root)
    protected = project.config.build.protected
    red_of: dict[str, tuple[str, tuple[str, ...]]] = {}
    checked = 0
    for event in events:
        payload = event.payload
        if isinstance(payload, RedVerified):
            tests = tuple(payload.run.tests) if payload.run is not None else ()
            red_of[event.subject] = (payload.commit, tests)
            continue
        if isinstance(payload, AmendmentApproved) and event.subject in red_of:
            # An approved amendment moves the protected baseline to the amended commit.
            red_of[event.subject] = (payload.commit, red_of[event.subject][1])
            continue
        if not isinstance(payload, GreenVerified | RefactorVerified):
            continue
        red = red_of.get(event.subject)
        if red is None:
            fails.append(f"event {event.seq}: {event.subject} has no RED before its GREEN")
            continue
        red_commit, red_tests = red
        commit = payload.commit
        try:
            before = protected_blobs(git, red_commit, protected)
            after = protected_blobs(git, commit, protected)
        except Exception as exc:
            fails.append(f"event {event.seq}: cannot read commit {commit[:10]}: {exc}")
            continue
        changed = sorted(
            path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
        )
        if changed:
            fails.append(
                f"event {event.seq}: {event.subject} changed protected files since RED: "
                + ", ".join(changed)
            )
        if payload.run is not None:
            fails += _check_run(project, event, payload.run, red_tests)
        checked += 1
    if checked:
        holds.append(
            f"cycles: {checked} GREEN/REFACTOR commits keep the RED commit's protected files "
            "and name passing runs"
        )
    return holds, fails


def _check_run(
    project: Project, event: Event, run: RunRecord, red_tests: tuple[str, ...]
) -> list[str]:
    report_path: Path = runs_dir(project) / run.run / REPORT_FILE
    try:
        report = parse_report(report_path)
    except ReportMissing:
        return [f"event {event.seq}: the report of run {run.run} is missing"]
    if report.sha256 != run.report_sha256:
        return [f"event {event.seq}: the report of run {run.run} was changed"]
    passed = report.passed()
    missing = [t for t in red_tests if t not in passed]
    if missing:
        return [
            f"event {event.seq}: run {run.run} does not show the RED-era tests passing: "
            + ", ".join(missing[:5])
        ]
    return []
