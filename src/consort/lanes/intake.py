"""Intake: the product owner's own words (product overview, NFRs, feature requests), recorded.

Intake files live in `.consort/intake/`; a feature request also becomes the feature's first
artifact (`features/<F>/feature-request.json`) and a `feature.created` event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from consort.core.artifacts.canonical import artifact_hash
from consort.core.artifacts.feature_request import FeatureRequest
from consort.core.artifacts.registry import ArtifactKind, write_artifact
from consort.core.derive import artifact_path
from consort.core.drive_lock import hold_writer
from consort.core.errors import UsageError
from consort.core.fsutil import atomic_write_text
from consort.core.ledger import Actor, Ledger, ledger_path
from consort.core.ledger.events import FeatureCreated, IntakeRecorded
from consort.core.project import Project
from consort.lanes.humans import refuse_agent


class IntakeKind(StrEnum):
    PRODUCT = "product"
    NFRS = "nfrs"
    FEATURE = "feature"


@dataclass(frozen=True)
class IntakeResult:
    kind: IntakeKind
    path: Path
    feature: str | None = None


def slugify(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug[:40].rstrip("-") or "feature"


def next_feature_id(project: Project) -> str:
    folder = project.layout.features
    numbers = [
        int(m.group(1))
        for entry in (folder.iterdir() if folder.is_dir() else [])
        if (m := re.match(r"F(\d+)-", entry.name))
    ]
    return f"F{max(numbers, default=0) + 1}"


def record(
    project: Project,
    kind: IntakeKind,
    text: str,
    *,
    title: str | None = None,
    user_facing: bool = False,
) -> IntakeResult:
    refuse_agent("intake")
    if not text.strip():
        raise UsageError("the intake text is empty: nothing recorded")
    with hold_writer(project.state_dir):
        ledger = Ledger.open_for_writing(ledger_path(project.state_dir))
        if kind is not IntakeKind.FEATURE:
            path = project.layout.intake / f"{kind.value}.md"
            atomic_write_text(path, text if text.endswith("\n") else text + "\n")
            ledger.record(
                IntakeRecorded(kind=kind.value, path=str(path.relative_to(project.root))),
                Actor.HUMAN,
                kind.value,
            )
            return IntakeResult(kind, path)
        if not title:
            first = text.strip().splitlines()[0].lstrip("# ").strip()
            title = first[:80] or "Feature"
        request = FeatureRequest(
            id=next_feature_id(project),
            slug=slugify(title),
            title=title,
            text=text,
            user_facing=user_facing,
            created=datetime.now(UTC),
        )
        key = request.key
        words = project.layout.intake / "features" / f"{key}.md"
        atomic_write_text(words, text if text.endswith("\n") else text + "\n")
        request_path = artifact_path(project.state_dir, key, ArtifactKind.FEATURE_REQUEST)
        write_artifact(request_path, request)
        ledger.record(
            FeatureCreated(
                title=title,
                user_facing=user_facing,
                request=str(request_path.relative_to(project.root)),
                hash=artifact_hash(request_path),
                words=str(words.relative_to(project.root)),
            ),
            Actor.HUMAN,
            key,
        )
        return IntakeResult(kind, words, key)


def resolve_feature(project: Project, name: str, known: list[str]) -> str:
    """ "F1" or "F1-stock-visibility" -> the feature's key."""
    if name in known:
        return name
    matches = [key for key in known if key.split("-", 1)[0] == name]
    if len(matches) == 1:
        return matches[0]
    listing = ", ".join(known) or "none yet"
    raise UsageError(f"no feature {name!r} (features: {listing})", fix="see `consort status`")
