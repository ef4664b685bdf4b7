"""The evidence travels with the repository.

After a feature is promoted, Consort commits what `consort verify` needs to re-prove it on a
fresh clone with no `.consort` of its own: the ledger, the intake, the approved artifacts, the
cycle records, each accepted turn output and each run's JUnit report (and the record of what
`init` wrote for Claude Code). Runs' logs, turns' scratch, worktrees, the database's files and
the secret stay out (`.gitignore`).

The commit is made when the drive that promoted stops, after the ledger's last record of that
drive, so that the checkout is clean once it ends. A drive killed between the promotion and the
commit leaves the promotion missing from the committed ledger: the next drive's stop commits it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from consort.adapters.agents.task import TASK_FILE
from consort.adapters.vcs import Git
from consort.core.layout import CLAUDE_MANIFEST_FILE, LEDGER_FILE, STATE_DIR, TURN_OUTPUTS_DIR
from consort.core.ledger import Event, EventType
from consort.core.ledger.events import FeaturePromoted
from consort.core.project import Project

EVIDENCE_FOLDERS = ("intake", "features", "cycles", "roles", "spikes")
EVIDENCE_GLOBS = ("runs/*/junit.xml",)


def evidence_paths(project: Project) -> list[str]:
    state = project.state_dir
    found: list[Path] = [state / LEDGER_FILE, state / CLAUDE_MANIFEST_FILE]
    found += [state / name for name in EVIDENCE_FOLDERS if (state / name).is_dir()]
    for pattern in EVIDENCE_GLOBS:
        found += [p for p in state.glob(pattern) if p.is_file()]
    found += declared_outputs(project.layout.turns)
    return sorted(str(p.relative_to(project.root)) for p in found if p.exists())


def declared_outputs(turns: Path) -> list[Path]:
    """Each turn's outputs as its task.json declared them (Consort wrote it; the agent can
    only read it), each a file, not a link, in the turn's outputs folder. Nothing else a turn
    left in that folder, the one folder of `.consort/` it may write, is committed: a link to
    an absolute path there, committed by Consort on the promoted branch, refused every later
    run of every commit made from it; a file or a folder there passed no rule at all."""
    import json

    found: list[Path] = []
    for task_file in sorted(turns.glob(f"*/{TASK_FILE}")):
        folder = task_file.parent / TURN_OUTPUTS_DIR
        try:
            declared = json.loads(task_file.read_text(encoding="utf-8")).get("outputs")
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(declared, dict):
            continue
        for named in declared.values():
            if not isinstance(named, str):
                continue
            path = folder / Path(named).name
            if path.is_file() and not path.is_symlink():
                found.append(path)
    return found


def commit_evidence(project: Project, message: str) -> str | None:
    """Commit the evidence files on the checked-out branch; the commit, or None when nothing
    changed. Forced past `.gitignore` (its `.consort/runs/` and `.consort/turns/` lines keep the
    logs and scratch out), with hooks off like every git call of Consort's."""
    git = Git(project.root)
    paths = evidence_paths(project)
    git.run("add", "-f", "--", *paths)
    staged = git.run("diff", "--cached", "--quiet", "--", *paths, check=False)
    if staged.ok:
        return None
    git.as_consort("commit", "-q", "--no-verify", "-m", message, "--", *paths)
    return git.out("rev-parse", "HEAD")


def unrecorded_promotions(project: Project, events: Sequence[Event]) -> list[str]:
    """The features promoted into the checked-out branch whose promotion its last commit's
    ledger does not hold yet (the ledger only grows: the committed one is a prefix)."""
    git = Git(project.root)
    branch = git.current_branch()
    committed = git.run("show", f"HEAD:{STATE_DIR}/{LEDGER_FILE}", check=False)
    known = committed.stdout.count("\n") if committed.ok else 0
    return [
        event.subject
        for event in events
        if event.seq > known
        and event.type is EventType.FEATURE_PROMOTED
        and FeaturePromoted.of(event).into == branch
    ]


def commit_pending_evidence(project: Project, events: Sequence[Event]) -> str | None:
    """Commit the evidence when a promotion into the checked-out branch is not committed yet:
    the commit, or None."""
    features = unrecorded_promotions(project, events)
    if not features:
        return None
    names = ", ".join(dict.fromkeys(features))
    return commit_evidence(project, f"Evidence of {names}: ledger, artifacts, runs")
