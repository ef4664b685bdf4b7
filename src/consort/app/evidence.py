"""The evidence of one build cycle (`F1/S1/T1`): its stages as `cycle.json` records them, and
every ledger event about it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from consort.core.errors import UsageError
from consort.core.project import Project


@dataclass(frozen=True)
class CycleEvidence:
    feature: str
    story: str
    item: str
    title: str
    stage: str  # where the cycle is now (plan, red, green, refactor, done, ...)
    commits: dict[str, str | None]  # red, green, refactor
    stages: dict[str, Any]  # cycle.json's stages, as written when each passed or failed
    events: list[dict[str, Any]]  # the ledger's events about this cycle, oldest first

    def as_json(self) -> dict[str, Any]:
        return {
            "feature": self.feature,
            "story": self.story,
            "item": self.item,
            "title": self.title,
            "stage": self.stage,
            "commits": self.commits,
            "stages": self.stages,
            "events": self.events,
        }


def cycle_evidence(project: Project, subject: str) -> CycleEvidence:
    """The evidence of cycle `F/S/T` (short ids like F1/S1/T1 or the full keys)."""
    from consort.app.project import derived_state
    from consort.core.ledger import Ledger, ledger_path
    from consort.lanes.intake import resolve_feature

    parts = subject.split("/")
    if len(parts) != 3 or not all(parts):
        raise UsageError(f"a cycle is named F/S/T, not {subject!r}", fix="e.g. F1/S1/T1")
    feature_name, story_name, item_id = parts
    state = derived_state(project)
    feature = state.feature(resolve_feature(project, feature_name, [f.id for f in state.features]))
    stories = feature.build.stories if feature is not None and feature.build else ()
    story = next((s for s in stories if story_name in (s.id, s.key)), None)
    item = next((i for i in story.items if i.id == item_id), None) if story else None
    if feature is None or story is None or item is None:
        raise UsageError(f"no cycle {subject!r}", fix="`consort status` lists the stories")
    record_path = project.layout.cycle_record(feature.id, story.key, item.id)
    record: dict[str, Any] = {}
    if record_path.is_file():
        record = json.loads(record_path.read_text(encoding="utf-8"))
    key = f"{feature.id}/{story.key}/{item.id}"
    path = ledger_path(project.state_dir)
    events = Ledger(path).read() if path.exists() else []
    return CycleEvidence(
        feature=feature.id,
        story=story.key,
        item=item.id,
        title=item.title,
        stage=item.stage.value,
        commits={
            "red": item.red_commit,
            "green": item.green_commit,
            "refactor": item.refactor_commit,
        },
        stages=dict(record.get("stages", {})),
        events=[event.as_json() for event in events if event.subject == key],
    )
