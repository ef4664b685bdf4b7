"""`consort next`: the next action and why, read only.

The answer is derived from the project's files only, so it is kept until one of them changes
(`consort.core.derived_cache`): an unchanged project answers without importing the artifact
models at all.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from consort.core import derived_cache
from consort.core.project import Project

if TYPE_CHECKING:
    from consort.core.machine import Action


@dataclass(frozen=True)
class NextReport:
    """The next action and why; `summary` is its one-line description."""

    kind: str
    lane: str
    feature: str | None
    role: str | None
    step: str | None
    attempt: int
    reason: str
    command: str | None
    summary: str

    @classmethod
    def of(cls, action: Action) -> NextReport:
        return cls(
            kind=action.kind.value,
            lane=action.lane.value,
            feature=action.feature,
            role=action.role.value if action.role else None,
            step=action.step.value if action.step else None,
            attempt=action.attempt,
            reason=action.reason,
            command=action.command,
            summary=action.describe(),
        )

    @classmethod
    def kept(cls, answer: dict[str, Any]) -> NextReport | None:
        """A report as `derived_cache` kept it, or None when it does not have this shape."""
        names = {f.name for f in fields(cls)}
        if set(answer) != names:
            return None
        try:
            return cls(**answer)
        except TypeError:
            return None

    def as_json(self) -> dict[str, Any]:
        shown = asdict(self)
        del shown["summary"]
        return shown


def next_action(project: Project, feature: str | None = None) -> NextReport:
    """The next action for the project, or for one feature (F1 or its full name); reads only."""
    question = f"next\0{feature or ''}"
    digest = derived_cache.inputs_digest(project.root, project.state_dir, question)
    kept = derived_cache.load(project.state_dir, question, digest)
    report = NextReport.kept(kept) if kept is not None else None
    if report is None:
        report = _derive_next(project, feature)
        derived_cache.store(project.state_dir, question, digest, asdict(report))
    return report


def _derive_next(project: Project, feature: str | None) -> NextReport:
    from consort.app.project import derived_state
    from consort.core.machine import next_action as decide

    state = derived_state(project)
    key = None
    if feature:
        from consort.lanes.intake import resolve_feature

        key = resolve_feature(project, feature, [f.id for f in state.features])
    return NextReport.of(decide(state, key))
