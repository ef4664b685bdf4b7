"""Re-proving every cycle from git objects and the stored test reports.

* At each GREEN and REFACTOR commit, the protected files (tests, test configuration) are
  byte-identical — the same blob ids — to the RED commit's.
* Every GREEN and REFACTOR names a run whose stored JUnit report still has the recorded hash and
  shows every test of the RED era passing; a sealed run's canaries came out as they must.
* Every merge of a story (and every promote) holds no protected file that neither side had, and
  leaves the target's applied migrations as they were.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from consort.adapters.scope import glob_match
from consort.adapters.tdd.junit import JUnitReport, ReportMissing, parse_report_bytes
from consort.adapters.tdd.runner import REPORT_FILE, runs_dir
from consort.adapters.tdd.seal import CONSORT_FILES, merge_violations
from consort.adapters.tdd.testconfig import CONFIG_FILES
from consort.adapters.vcs import Git, tree_entries
from consort.core.config import RunnerKind
from consort.core.errors import ConsortError
from consort.core.ledger import Event, EventType
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
    # Consort's own files and every test configuration source, whatever the list says.
    protected = (*project.config.build.protected, *CONFIG_FILES, *CONSORT_FILES)
    red_of: dict[str, tuple[str, tuple[str, ...]]] = {}
    checked = 0
    merges = 0
    story_heads: dict[str, str] = {}  # F/S -> the head Consort last recorded for the story
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
        if event.type in (EventType.STORY_MERGED, EventType.FEATURE_PROMOTED):
            expected = (
                story_heads.get(event.subject) if event.type is EventType.STORY_MERGED else None
            )
            fails += _check_merge(project, git, event, expected)
            merges += 1
            continue
        if event.type in HEAD_EVENTS and event.data.get("commit"):
            story_heads["/".join(event.subject.split("/")[:2])] = str(event.data["commit"])
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
    if merges:
        holds.append(f"merges: {merges} merge commits hold only protected files of their sides")
    return holds, fails


HEAD_EVENTS = (EventType.RED_VERIFIED, EventType.GREEN_VERIFIED, EventType.REFACTOR_VERIFIED)


def _check_merge(project: Project, git: Git, event: Event, expected: str | None) -> list[str]:
    commit = str(event.data.get("commit") or "")
    try:
        parents = git.out("rev-list", "--parents", "-n", "1", commit).split()[1:]
    except ConsortError as exc:
        return [f"event {event.seq}: cannot read merge commit {commit[:10]}: {exc.message}"]
    if len(parents) != 2:
        return [f"event {event.seq}: {commit[:10]} is not a merge commit"]
    target, merged_side = parents
    if expected is not None and merged_side != expected:
        return [
            f"event {event.seq}: merge {commit[:10]} took {merged_side[:10]}, not the story head "
            f"Consort recorded ({expected[:10]}): the branch was moved"
        ]
    found = merge_violations(
        project.config,
        tree_entries(project.root, merged_side),
        tree_entries(project.root, target),
        tree_entries(project.root, commit),
    )
    return [f"event {event.seq}: merge {commit[:10]}: {v}" for v in found]


def _check_run(
    project: Project, event: Event, run: RunRecord, red_tests: tuple[str, ...]
) -> list[str]:
    return [f"event {event.seq}: {problem}" for problem in check_run(project, run, red_tests)]


def _report(project: Project, run: RunRecord) -> tuple[JUnitReport | None, str | None]:
    report_path: Path = runs_dir(project) / run.run / REPORT_FILE
    try:
        dialect = RunnerKind(run.runner) if run.runner in set(RunnerKind) else RunnerKind.PYTEST
        report = parse_report_bytes(report_path.read_bytes(), prefix=run.id_prefix, dialect=dialect)
    except (ReportMissing, FileNotFoundError):
        return None, f"the report of run {run.run} is missing"
    if report.sha256 != run.report_sha256:
        return None, f"the report of run {run.run} was changed"
    return report, None


def report_problem(project: Project, run: RunRecord) -> str | None:
    """Why the run's stored report is not the one recorded, or None when it is."""
    return _report(project, run)[1]


def check_run(project: Project, run: RunRecord, red_tests: tuple[str, ...]) -> list[str]:
    """A GREEN's run: its report as recorded, its canaries holding, the RED-era tests passing."""
    report, problem = _report(project, run)
    if report is None:
        return [problem or f"the report of run {run.run} cannot be read"]
    # pytest runs always have canaries; a junit run has them when its runner has a canary file
    # (Vitest, Jest), and then they must have held as well.
    with_canaries = run.runner == RunnerKind.PYTEST.value or run.canaries is not None
    if run.sealed and with_canaries and not (run.canaries is not None and run.canaries.holds):
        return [f"the canaries of run {run.run} did not hold"]
    passed = report.passed()
    missing = [t for t in red_tests if t not in passed]
    if missing:
        return [f"run {run.run} does not show the RED-era tests passing: " + ", ".join(missing[:5])]
    return []
