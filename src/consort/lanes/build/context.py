"""What every build action works with: the project, its ledger, and where in the build it is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from consort.adapters.agents.config import AgentSettings
from consort.adapters.paired import PairedBranches
from consort.core.errors import ConsortError
from consort.core.layout import STATE_GLOB
from consort.core.ledger import Actor, Ledger
from consort.core.ledger.events import EventPayload
from consort.core.project import Project
from consort.core.state import BuildState, FeatureState, ItemState, State, StoryState
from consort.lanes.turn import SharedWrites

STATE_GUARD = STATE_GLOB  # Consort's state, in any checkout: never an agent's to change

Progress = Callable[[str], None]


@dataclass
class Build:
    """What one build action needs: the project, its ledger, and where in the build it is."""

    project: Project
    ledger: Ledger
    state: State
    feature: FeatureState
    build: BuildState
    progress: Progress
    # An experiment's approach: its own driver, and what Consort writes beside its turns.
    driver: AgentSettings | None = None
    shared: SharedWrites | None = None

    @property
    def paired(self) -> PairedBranches:
        return PairedBranches(self.project)

    def story(self, key: str | None) -> StoryState:
        found = next((s for s in self.build.stories if s.key == key), None)
        if found is None:
            raise ConsortError(f"no story {key!r} in {self.feature.id}")
        return found

    def subject(self, story: StoryState, item: ItemState | None = None) -> str:
        parts = [self.feature.id, story.key] + ([item.id] if item else [])
        return "/".join(parts)

    def record(self, payload: EventPayload, subject: str) -> None:
        self.ledger.record(payload, Actor.ORCHESTRATOR, subject)

    @property
    def protected(self) -> tuple[str, ...]:
        """What a driver may not change: the project's list, every test configuration source
        and Consort's own files, whatever the list says."""
        from consort.adapters.tdd.seal import CONSORT_FILES
        from consort.adapters.tdd.testconfig import CONFIG_FILES

        return (*self.project.config.build.protected, *CONFIG_FILES, *CONSORT_FILES, STATE_GUARD)
