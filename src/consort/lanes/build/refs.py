"""Refs are Consort's: every branch head it creates or moves is in the ledger, and a branch that
points elsewhere when Consort is about to merge or promote it stops the drive (exit 4).

The recorded head of a branch is the commit of the last ledger event that put it there: the
story branch's creation, each verified RED, GREEN and REFACTOR, the feature branch's creation
and each story merged into it.
"""

from __future__ import annotations

from collections.abc import Iterable

from consort.adapters.vcs import Git
from consort.core.errors import ConsortError, ExitCode
from consort.core.ledger import Event, EventType

STEP_EVENTS = (EventType.RED_VERIFIED, EventType.GREEN_VERIFIED, EventType.REFACTOR_VERIFIED)


def recorded_heads(events: Iterable[Event]) -> dict[str, str]:
    """branch name -> the commit Consort last recorded for it."""
    heads: dict[str, str] = {}
    for event in events:
        data = event.data
        if event.type is EventType.BRANCH_CREATED:
            head = data.get("head") or data.get("base_commit")
            if head:
                heads[str(data["branch"])] = str(head)
        elif event.type in STEP_EVENTS and data.get("commit"):
            feature, story = event.subject.split("/")[:2]
            heads[f"story/{feature}/{story}"] = str(data["commit"])
        elif event.type is EventType.STORY_MERGED and data.get("into"):
            heads[str(data["into"])] = str(data["commit"])
    return heads


def require_recorded(git: Git, branch: str, events: Iterable[Event]) -> None:
    """Stop (exit 4) when `branch` does not point where the ledger says Consort left it."""
    expected = recorded_heads(events).get(branch)
    if expected is None:
        return  # a ledger from before heads were recorded
    actual = git.run("rev-parse", "-q", "--verify", f"refs/heads/{branch}^{{commit}}", check=False)
    found = actual.stdout.strip()
    if found != expected:
        raise ConsortError(
            f"{branch} points at {found[:10] or 'nothing'}, but Consort left it at "
            f"{expected[:10]}: refs are Consort's, and this one was moved behind its back",
            fix=f"inspect it (`git log {branch}`), then put it back: "
            f"`git update-ref refs/heads/{branch} {expected}`",
            code=ExitCode.INTEGRITY,
        )
