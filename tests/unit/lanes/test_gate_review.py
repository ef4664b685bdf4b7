"""What a person sees at a gate: each covered artifact's path and a readable summary, the diff
since the last approval, and for a story its cycles with their evidence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from consort.core.artifacts.canonical import artifact_hash
from consort.core.artifacts.registry import ArtifactKind, default_filename
from consort.core.derive import derive
from consort.core.ledger import Actor, Ledger, ledger_path
from consort.core.ledger.events import (
    ArtifactAccepted,
    ArtifactSource,
    FeatureCreated,
    GateApproved,
)
from consort.core.project import Project
from consort.core.state import DESIGN_STEPS, FeatureState, GateKind
from consort.lanes.gate_review import design_review, story_review
from tests.helpers import FIXTURES

KEY = "F1-stock-visibility"


class Designed:
    """A project whose design of F1 was written by turns and accepted (not approved yet)."""

    def __init__(self, root: Path) -> None:
        self.project = Project(root)
        (root / "consort.toml").write_text("")
        self.features = root / ".consort" / "features" / KEY
        self.features.mkdir(parents=True)
        self.ledger = Ledger.open_for_writing(ledger_path(self.project.state_dir))
        self.ledger.record(
            FeatureCreated(
                title="Stock visibility",
                user_facing=True,
                request="r.json",
                hash="0" * 64,
                words="w.md",
            ),
            Actor.HUMAN,
            KEY,
        )
        for number, step in enumerate(DESIGN_STEPS, start=1):
            self.accept(step.artifact, f"{number:04d}-{step.role.value}-{step.step.value}")

    def accept(self, kind: ArtifactKind, turn: str, data: object = None) -> None:
        """Accept `data` (default: the fixture) for `kind` from turn folder `turn`."""
        name = default_filename(kind)
        output = self.project.state_dir / "turns" / turn / "outputs" / name
        output.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            shutil.copy(FIXTURES / "artifacts" / name, output)
        else:
            output.write_text(json.dumps(data, indent=2))
        shutil.copy(output, self.features / name)
        digest = artifact_hash(output)
        accepted = ArtifactAccepted(
            kind=kind, hash=digest, turn=turn, source=ArtifactSource.TURN, path=name
        )
        self.ledger.record(accepted, Actor.ORCHESTRATOR, KEY)

    def feature(self) -> FeatureState:
        state = derive(self.ledger.read(), self.project.config, self.project.state_dir)
        found = state.feature(KEY)
        assert found is not None
        return found

    def hashes(self) -> dict[str, str]:
        feature = self.feature()
        return {
            s.artifact.value: str(feature.artifacts[s.artifact].current_hash)
            for s in feature.steps()
        }

    def approve(self) -> None:
        self.ledger.record(
            GateApproved(gate=GateKind.DESIGN, hashes=self.hashes(), note=None), Actor.HUMAN, KEY
        )

    def review(self) -> str:
        return design_review(self.project, self.ledger.read(), self.feature(), self.hashes())


@pytest.fixture
def designed(tmp_path: Path) -> Designed:
    return Designed(tmp_path)


def test_the_design_gate_shows_paths_hashes_and_a_readable_summary(designed: Designed) -> None:
    shown = designed.review()
    for step in DESIGN_STEPS:
        assert f".consort/features/{KEY}/{default_filename(step.artifact)}" in shown
    for digest in designed.hashes().values():
        assert f"sha256 {digest}" in shown
    # stories and acceptance criteria, layers, tables and constraints, the test list, pages
    assert "S1 File a stock count: as warehouse clerk" in shown
    assert (
        "AC3 given SKU WID-001 and location A1 exist; when the clerk files a count of -3" in shown
    )
    assert "layer service (imports repository, model)" in shown
    assert "table stock_records (id bigint not null" in shown
    assert "check stock_records_quantity_check: quantity >= 0" in shown
    assert "foreign key stock_records_sku_id_fkey (sku_id) -> skus (id) on delete restrict" in shown
    assert "T3 S1/AC3 behaviour: a negative count is refused" in shown
    assert "page Stock by location /locations/{code}/stock (S2)" in shown
    assert "never approved before" in shown


def test_the_design_gate_shows_the_diff_since_the_last_approval(designed: Designed) -> None:
    designed.approve()
    assert "none: every artifact is as it was approved" in designed.review()
    data = json.loads((FIXTURES / "artifacts" / "db-design.json").read_text())
    data["tables"][2]["checks"][0]["expression"] = "quantity > 0"
    designed.accept(ArtifactKind.DB_DESIGN, "0009-dba-db-design", data)
    shown = designed.review()
    assert "Changes since the last approval (event" in shown
    db_design = f".consort/features/{KEY}/db-design.json"
    assert f"--- {db_design} (approved)" in shown and f"+++ {db_design} (now)" in shown
    assert '-          "expression": "quantity >= 0",' in shown
    assert '+          "expression": "quantity > 0",' in shown
    assert "architecture.json (approved)" not in shown  # unchanged artifacts show no diff


def test_a_hand_edit_since_the_approval_is_named_even_without_the_old_text(
    designed: Designed,
) -> None:
    designed.approve()
    shutil.rmtree(designed.project.state_dir / "turns")  # turn folders are not committed
    path = designed.features / "test-list.json"
    data = json.loads(path.read_text())
    data["items"][0]["title"] = "filing a count stores it"
    path.write_text(json.dumps(data))
    shown = designed.review()
    assert f".consort/features/{KEY}/test-list.json: changed" in shown
    assert "T1 S1/AC1 behaviour: filing a count stores it" in shown


def _git(root: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_the_story_gate_shows_the_story_its_cycles_and_their_evidence(
    designed: Designed,
) -> None:
    from consort.core.layout import Layout
    from consort.core.state import GateStatus, ItemStage, ItemState, StoryState

    root = designed.project.root
    _git(root, "init", "-q", "-b", "main")
    _git(root, "commit", "-q", "--allow-empty", "-m", "base")
    base = _git(root, "rev-parse", "HEAD")
    (root / "stock.py").write_text("def file_count(quantity):\n    return quantity\n")
    _git(root, "add", "stock.py")
    _git(root, "commit", "-q", "-m", "GREEN T1")
    green = _git(root, "rev-parse", "HEAD")
    record = Layout(designed.project.state_dir).cycle_record(KEY, "S1-file-stock", "T1")
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    t1 = ItemState(
        id="T1",
        title="filing a count stores the quantity",
        stage=ItemStage.DONE,
        failures=0,
        feedback=None,
        red_commit=base,
        green_commit=green,
        passing=("tests/test_stock.py::test_t1", "tests/test_stock.py::test_t0"),
        review_reasons=("the change is minimal",),
    )
    story = StoryState(
        id="S1",
        key="S1-file-stock",
        branch=f"story/{KEY}/S1-file-stock",
        created=True,
        database="db",
        worktree=str(root),
        base_commit=base,
        baseline_passing=(),
        items=(t1,),
        gate=GateStatus.OPEN,
        gate_actor=None,
        merged=False,
    )
    shown = story_review(designed.project, designed.feature(), story)
    assert shown.startswith(f"Accept story S1-file-stock of {KEY}?")
    assert "S1 File a stock count: as warehouse clerk" in shown
    assert "AC4 given no SKU NOPE-999 exists" in shown
    assert "AC5" not in shown  # another story's criterion
    assert f"branch story/{KEY}/S1-file-stock, from {base[:12]}" in shown
    assert "T1 filing a count stores the quantity" in shown
    assert f"RED {base[:12]}  GREEN {green[:12]}; 2 test(s) passing" in shown
    assert "review: the change is minimal" in shown
    assert f"evidence: .consort/cycles/{KEY}/S1-file-stock/T1/cycle.json" in shown
    assert "stock.py | 2 ++" in shown


def test_answering_no_at_the_gate_records_nothing_and_offers_reject(
    designed: Designed, monkeypatch: pytest.MonkeyPatch
) -> None:
    from consort.core.errors import ExitCode, UsageError
    from consort.lanes import gates

    monkeypatch.delenv("CONSORT_TASK", raising=False)
    monkeypatch.setattr(gates, "person_present", lambda: True)
    asked: list[str] = []

    def say_no(question: str) -> bool:
        asked.append(question)
        return False

    before = len(designed.ledger.read())
    with pytest.raises(UsageError) as caught:
        gates.approve(designed.project, GateKind.DESIGN, "F1", None, say_no)
    assert caught.value.code is ExitCode.USAGE
    assert caught.value.message == "not approved"
    assert caught.value.fix is not None
    assert 'consort reject design F1 --note "..."' in caught.value.fix
    (question,) = asked
    assert "T3 S1/AC3 behaviour: a negative count is refused" in question
    assert len(Ledger(ledger_path(designed.project.state_dir)).read()) == before


def test_each_artifact_against_the_last_approval_as_a_record(designed: Designed) -> None:
    from consort.lanes.gate_review import Change, since_approval

    assert since_approval(designed.project, designed.ledger.read(), designed.feature(), {}) is None
    hashes = designed.hashes()
    approved = {k: v for k, v in hashes.items() if k != "ux"}  # ux came after the approval
    designed.ledger.record(
        GateApproved(gate=GateKind.DESIGN, hashes=approved, note=None), Actor.PROXY, KEY
    )
    data = json.loads((FIXTURES / "artifacts" / "db-design.json").read_text())
    data["tables"][2]["checks"][0]["expression"] = "quantity > 0"
    designed.accept(ArtifactKind.DB_DESIGN, "0009-dba-db-design", data)
    now = {**designed.hashes(), "architecture": None}  # unreadable now
    since = since_approval(designed.project, designed.ledger.read(), designed.feature(), now)
    assert since is not None and since.actor == "proxy"
    changes = {c.artifact.value: c.change for c in since.artifacts}
    assert changes == {
        "feature-spec": Change.UNCHANGED,
        "architecture": Change.UNREADABLE,
        "db-design": Change.CHANGED,
        "test-list": Change.UNCHANGED,
        "ux": Change.NEW,
    }
    (db,) = [c for c in since.artifacts if c.change is Change.CHANGED]
    assert '+          "expression": "quantity > 0",' in db.diff
    assert db.as_json()["change"] == "changed" and since.as_json()["seq"] == since.seq
    shutil.rmtree(designed.project.state_dir / "turns")  # turn folders are not committed
    again = since_approval(designed.project, designed.ledger.read(), designed.feature(), now)
    assert again is not None
    assert {c.artifact.value: c.change for c in again.artifacts}["db-design"] is (
        Change.CHANGED_UNSEEN
    )


def test_on_a_fresh_clone_the_approved_version_comes_from_git(designed: Designed) -> None:
    root = designed.project.root
    _git(root, "init", "-q", "-b", "main")
    path = designed.features / "test-list.json"
    approved_title = json.loads(path.read_text())["items"][0]["title"]
    _git(root, "add", ".consort/features")
    _git(root, "commit", "-q", "-m", "the design as approved")
    designed.approve()
    data = json.loads(path.read_text())
    data["items"][0]["title"] = "filing a count stores it"
    path.write_text(json.dumps(data))
    _git(root, "commit", "-q", "-am", "a later edit, committed")
    data["items"][0]["title"] = "filing a count stores it, again"
    path.write_text(json.dumps(data))  # and one more, not committed
    shutil.rmtree(designed.project.state_dir / "turns")  # what a fresh clone lacks
    shown = designed.review()
    assert f"--- .consort/features/{KEY}/test-list.json (approved)" in shown
    assert f'    -      "title": "{approved_title}"' in shown
    assert '    +      "title": "filing a count stores it, again"' in shown
    assert 'filing a count stores it"' not in shown  # the later commit was not approved
