"""Spikes: a throwaway exploration on a paired branch, outside the gated loop.

`start` makes the spike's branch with its own copy of the parent's database (the paired-branch
machinery: both or neither) and a worktree whose `.env` points at that copy, with the spike's own
role. `end` keeps the worktree's `notes.md` under `.consort/spikes/<NAME>/` and removes the
worktree, the branch and the database; the ledger records both, and the time box fixed at the
start is the only one there is.

Every step of `end` can be repeated: a crash half-way leaves a spike the next `end` (or `gc`)
finishes, and the notes, once kept, are never overwritten by a later attempt.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from consort.adapters.envfile import set_database_url
from consort.adapters.paired import PairedBranches
from consort.core.derive_build import feature_branch
from consort.core.errors import ConsortError, UsageError
from consort.core.fsutil import atomic_write_text
from consort.core.layout import SPIKE_NOTES_FILE
from consort.core.ledger import Actor, Ledger
from consort.core.ledger.events import SpikeEnded, SpikeEndReason, SpikeStarted
from consort.core.project import Project
from consort.core.spikes import (
    Spike,
    SpikeCondition,
    branch_of,
    check_name,
    expiry,
    fold_spikes,
    subject_of,
)


@dataclass(frozen=True)
class SpikeEnd:
    """What ending one spike removed and kept."""

    name: str
    reason: SpikeEndReason
    notes: str | None  # relative to the project root
    removed_worktree: bool
    removed_branch: bool
    dropped_database: bool

    def as_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "reason": self.reason.value,
            "notes": self.notes,
            "removed_worktree": self.removed_worktree,
            "removed_branch": self.removed_branch,
            "dropped_database": self.dropped_database,
        }


def notes_template(name: str, feature: str | None, parent: str) -> str:
    about = f" for {feature}" if feature else ""
    return (
        f"# Spike {name}{about}\n\n"
        f"A throwaway exploration on a copy of {parent}'s database. When the spike ends its code\n"
        "and database are removed; only this file is kept, and it is given to the feature's\n"
        "later design and build turns. Write down what you tried, what you learned, and what\n"
        "you would do.\n\n"
        "## Tried\n\n## Learned\n\n## Recommend\n"
    )


def spikes_of(ledger: Ledger) -> dict[str, Spike]:
    return fold_spikes(ledger.read())


def start(
    project: Project,
    ledger: Ledger,
    name: str,
    *,
    feature: str | None,
    ttl: timedelta,
    now: datetime | None = None,
) -> Spike:
    check_name(name)
    known = spikes_of(ledger)
    if name in known:
        state = known[name].condition(now or datetime.now(UTC))
        raise UsageError(
            f"spike {name!r} was started already ({state.value}); a spike's name is used once",
            fix="choose another name"
            if state is SpikeCondition.ENDED
            else "see `consort spike list`",
        )
    paired = PairedBranches(project)
    branch = branch_of(name)
    parent = _parent_branch(paired, feature)
    worktree = project.layout.spike_worktree(name)
    if worktree.exists() or paired.git.branch_exists(branch):
        # Left by a start that was killed before the ledger recorded it: no spike owns them.
        where = worktree.relative_to(project.root)
        raise UsageError(
            f"{branch} (or its worktree {where}) is left from a spike start that did not finish",
            fix=f"`git worktree remove --force {where}` and `consort branch delete {branch} "
            "--force`, then start the spike again",
        )
    info = paired.create(branch, parent)
    try:
        worktree.parent.mkdir(parents=True, exist_ok=True)
        paired.git.run("worktree", "prune")
        paired.git.run("worktree", "add", "-q", str(worktree), branch)
        # Its own database, with its own role: never the parent's, never the admin's.
        set_database_url(worktree / ".env", paired.url(branch), f"database of spike {name}")
        notes = worktree / SPIKE_NOTES_FILE
        if not notes.exists():
            atomic_write_text(notes, notes_template(name, feature, parent))
        base_commit = paired.git.out("rev-parse", branch)
    except BaseException:
        _remove_worktree(paired, worktree)
        paired.delete(branch, force=True)
        raise
    started = now or datetime.now(UTC)
    payload = SpikeStarted(
        name=name,
        feature=feature,
        branch=branch,
        parent=parent,
        database=info.database,
        worktree=str(worktree.relative_to(project.root)),
        base_commit=base_commit,
        ttl_s=ttl.total_seconds(),
        expires=expiry(started, ttl),
    )
    ledger.record(payload, Actor.HUMAN, subject_of(name))
    return spikes_of(ledger)[name]


def end(
    project: Project,
    ledger: Ledger,
    name: str,
    *,
    reason: SpikeEndReason = SpikeEndReason.ENDED,
) -> SpikeEnd:
    spike = spikes_of(ledger).get(name)
    if spike is None:
        raise UsageError(f"no spike {name!r}", fix="see `consort spike list`")
    if spike.ended is not None:
        raise UsageError(f"spike {name!r} has ended already", fix="see `consort spike list`")
    paired = PairedBranches(project)
    worktree = project.root / spike.worktree
    notes_path = _keep_notes(project, name, worktree)
    head = (
        paired.git.out("rev-parse", spike.branch)
        if paired.git.branch_exists(spike.branch)
        else None
    )
    removed_worktree = _remove_worktree(paired, worktree)
    removed_branch = paired.git.branch_exists(spike.branch)
    dropped = paired.dbs.exists(spike.database)
    if removed_branch or dropped:
        paired.delete(spike.branch, force=True)
    notes_rel = str(notes_path.relative_to(project.root)) if notes_path else None
    actor = Actor.HUMAN if reason is SpikeEndReason.ENDED else Actor.ORCHESTRATOR
    ledger.record(
        SpikeEnded(
            name=name,
            reason=reason,
            notes=notes_rel,
            notes_sha256=_sha256(notes_path) if notes_path else None,
            head=head,
        ),
        actor,
        subject_of(name),
    )
    return SpikeEnd(name, reason, notes_rel, removed_worktree, removed_branch, dropped)


def collect_expired(
    project: Project, ledger: Ledger, now: datetime | None = None
) -> list[SpikeEnd]:
    """End every spike whose time box has run out; their notes stay."""
    moment = now or datetime.now(UTC)
    expired = [
        s for s in spikes_of(ledger).values() if s.condition(moment) is SpikeCondition.EXPIRED
    ]
    return [end(project, ledger, s.name, reason=SpikeEndReason.EXPIRED) for s in expired]


def _parent_branch(paired: PairedBranches, feature: str | None) -> str:
    """The feature's branch once it has one (with its database); before, and for a spike of the
    project, the checked-out branch (main, as a rule)."""
    if feature is not None:
        branch = feature_branch(feature)
        if paired.git.branch_exists(branch) and paired.dbs.exists(paired.names(branch).database):
            return branch
    current = paired.git.current_branch()
    if current is None:
        raise UsageError("HEAD is detached: check out the branch to explore from")
    return current


def _keep_notes(project: Project, name: str, worktree: Path) -> Path | None:
    """Copy the worktree's notes.md under .consort/spikes/<NAME>/ (once: a kept copy stays)."""
    kept = project.layout.spike_notes(name)
    if kept.is_file():
        return kept
    source = worktree / SPIKE_NOTES_FILE
    if source.is_symlink() or not source.is_file():
        # A link could point anywhere (a secret, the parent's files): only a plain file is kept.
        return None
    try:
        text = source.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConsortError(
            f"{source} is not UTF-8 text", fix="fix the notes, then end the spike again"
        ) from exc
    atomic_write_text(kept, text)
    return kept


def _remove_worktree(paired: PairedBranches, worktree: Path) -> bool:
    if not worktree.exists():
        paired.git.run("worktree", "prune")
        return False
    removed = paired.git.run("worktree", "remove", "--force", "--force", str(worktree), check=False)
    if not removed.ok:
        import shutil

        shutil.rmtree(worktree, ignore_errors=True)
        paired.git.run("worktree", "prune")
    return True


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
