"""A turn output that is a link: Consort reads no file through a link an agent made.

A sandboxed spec author (linking_agent.py) makes its output a symbolic link to a valid spec
planted in `.consort/db/`, which its sandbox hides. Consort, outside the sandbox, would read
that file as the turn's output: an artifact, or feedback on it, made of what the agent was not
shown. The output is refused as a link, the turn fails, and its retry (honest) goes on. Real
project: the embedded PostgreSQL, real git, real bubblewrap.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import MINI, MINI_FEATURE, configure_cheat, consort, events, start_mini_project
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

LINKING = Path(__file__).parent / "linking_agent.py"


@pytest.fixture(scope="module")
def linked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("link") / "counter"
    marker = f"hidden-{uuid.uuid4().hex[:12]}"

    def configure(root: Path) -> None:
        # A valid spec where the sandbox shows nothing: beside the project secret.
        planted = root / ".consort" / "db" / "planted.json"
        spec = json.loads((MINI / "feature-spec.json").read_text())
        spec["title"] = marker
        planted.write_text(json.dumps(spec))
        configure_cheat(root, marker, "spec-author", LINKING, str(planted))

    try:
        start_mini_project(root, configure)
        consort("drive", "--until", "design", cwd=root, timeout=600)
        yield root, marker
    finally:
        destroy_project_cluster(root)


def test_the_target_was_hidden_from_the_agent(linked: tuple[Path, str]) -> None:
    root, _ = linked
    (stdout,) = sorted((root / ".consort" / "turns").glob("0001-*/stdout"))
    assert json.loads(stdout.read_text().splitlines()[0]) == {"target inside the sandbox": "hidden"}


def test_nothing_of_the_hidden_file_became_an_artifact(linked: tuple[Path, str]) -> None:
    root, marker = linked
    spec = root / ".consort" / "features" / MINI_FEATURE / "feature-spec.json"
    assert spec.is_file()
    assert marker not in spec.read_text()
    for path in (root / ".consort" / "turns").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert marker not in path.read_text(errors="replace"), path


def test_the_linked_output_failed_its_turn_and_the_retry_went_on(linked: tuple[Path, str]) -> None:
    root, _ = linked
    recorded = events(root)
    (first,) = [
        e
        for e in recorded
        if e["type"] in ("turn.finished", "turn.failed")
        and e["data"].get("step") == "spec"
        and e["data"].get("attempt") == 1
    ]
    assert first["type"] == "turn.failed", first
    assert any("link" in error for error in first["data"]["errors"]), first["data"]["errors"]
    accepted = [e for e in recorded if e["type"] == "artifact.accepted"]
    assert accepted and all(e["data"].get("turn") != "0001-spec-author-spec" for e in accepted)
    assert recorded[-1]["type"] == "drive.stopped"
    assert recorded[-1]["data"]["reason"] == "await-gate"
