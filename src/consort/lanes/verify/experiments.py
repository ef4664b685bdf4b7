"""`consort verify` for experiments.

The selected approach's GREEN is recorded as the cycle's `green.verified` and re-proved with the
other cycles (`verify.cycles`); here, that it is the commit of an attempt Consort proved for the
approach the person selected. Every approach's evidence stays auditable: each attempt's stored
report still has its recorded hash, and each passing attempt's commit (while it can be read:
archived branches go at `consort branch gc`) keeps the RED commit's protected files, with a run
that shows the RED-era tests passing.
"""

from __future__ import annotations

from consort.adapters.tdd.seal import CONSORT_FILES
from consort.adapters.tdd.testconfig import CONFIG_FILES
from consort.adapters.vcs import Git
from consort.core.experiments import Experiment, fold_experiments
from consort.core.ledger import Event
from consort.core.ledger.events import ApproachAttempted, GreenVerified, RedVerified
from consort.core.project import Project
from consort.lanes.verify.cycles import check_run, protected_blobs, report_problem


def verify_experiments(project: Project, events: list[Event]) -> tuple[list[str], list[str]]:
    """What holds and what fails; nothing at all for a project without experiments."""
    experiments = fold_experiments(events)
    if not experiments:
        return [], []
    fails: list[str] = []
    attempts = 0
    for experiment in experiments:
        fails += _selected(events, experiment)
        for approach in experiment.approaches.values():
            for attempt in approach.attempts:
                if attempt.run is None:
                    continue
                attempts += 1
                where = f"{experiment.subject} approach {approach.name} attempt {attempt.attempt}"
                if not attempt.passed:
                    if (problem := report_problem(project, attempt.run)) is not None:
                        fails.append(f"{where}: {problem}")
                    continue
                fails += [
                    f"{where}: {problem}"
                    for problem in _passing(project, events, experiment, attempt)
                ]
    if fails:
        return [], fails
    chosen = sum(1 for e in experiments if e.selected is not None)
    return [
        f"experiments: {len(experiments)} ({chosen} selected); {attempts} approach attempts keep "
        "their recorded reports, and each passing one the RED commit's protected files"
    ], []


def _selected(events: list[Event], experiment: Experiment) -> list[str]:
    chosen = experiment.selected
    if chosen is None:
        return []
    approach = experiment.approaches.get(chosen.approach)
    attempt = approach.passing_attempt if approach is not None else None
    if approach is None or not approach.passed or attempt is None:
        return [f"{experiment.subject}: the selected approach {chosen.approach} never passed"]
    if attempt.commit != chosen.commit:
        return [
            f"{experiment.subject}: the selection names {chosen.commit[:10]}, but approach "
            f"{approach.name} passed at {str(attempt.commit)[:10]}"
        ]
    greens = [
        e
        for e in events
        if e.subject == experiment.subject and isinstance(e.payload, GreenVerified)
    ]
    if not any(GreenVerified.of(e).commit == chosen.commit for e in greens):
        return [f"{experiment.subject}: no GREEN records the selected commit {chosen.commit[:10]}"]
    return []


def _passing(
    project: Project, events: list[Event], experiment: Experiment, attempt: ApproachAttempted
) -> list[str]:
    commit, run = attempt.commit, attempt.run
    if commit is None or run is None:
        return ["passed without a commit"]
    red = experiment.started.red_commit
    red_tests: tuple[str, ...] = ()
    for event in events:
        if event.subject == experiment.subject and isinstance(event.payload, RedVerified):
            verified = RedVerified.of(event)
            if verified.commit == red and verified.run is not None:
                red_tests = tuple(verified.run.tests)
    fails = check_run(project, run, red_tests)
    git = Git(project.root)
    if not git.run("cat-file", "-e", f"{commit}^{{commit}}", check=False).ok:
        return fails  # its archived branch was collected: the report is what stays
    protected = (*project.config.build.protected, *CONFIG_FILES, *CONSORT_FILES)
    before, after = protected_blobs(git, red, protected), protected_blobs(git, commit, protected)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    if changed:
        fails.append(f"changed protected files since RED: {', '.join(changed)}")
    return fails
