"""Where everything lives in a project's `.consort/` folder: the one place that names its paths.

    .consort/
      ledger.jsonl                   every event, hash-chained               (committed)
      intake/                        the product owner's words               (committed)
      features/<F>/                  the design artifacts                    (committed)
      cycles/<F>/<S>/<T>/cycle.json  each cycle's stages with evidence       (committed)
      roles/                         role prompts the project may override   (committed)
      runs/<NNNN-label>/             junit.xml (committed), logs             (ignored)
      turns/<NNNN>-<role>-<step>/    outputs/ (committed), task.json, stdout (ignored)
      spikes/<NAME>/notes.md         what an ended spike learned             (committed)
      worktrees/<F>/<S>/             story worktrees                         (ignored)
      worktrees/_spikes/<NAME>/      a running spike's worktree              (ignored)
      worktrees/_experiments/<F>/<S>/<T>-<n>/<NAME>/  an approach's worktree (ignored)
      db/                            the secret (0600) and cluster.json      (ignored)
      run/                           process state (pids)                    (ignored)
      ledger.lock, drive.lock        locks                                   (ignored)
      claude-manifest.json           what init wrote for Claude Code         (committed)

`runs/` and `turns/` are ignored as folders; the evidence commit adds the committed files in them
past the ignore lines (`consort.lanes.evidence`), so a run's logs never reach git.

The names are part of Consort's on-disk contract: a project made by one version is read by the
next, so never rename one. What is inside a turn folder is the agent protocol's
(`consort.adapters.agents.task`); what is inside `db/` is the database adapters'.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STATE_DIR = ".consort"
STATE_GLOB = f"{STATE_DIR}/**"
"""Every path in the state folder, as a scope glob: out of every agent's reach."""

LEDGER_FILE = "ledger.jsonl"
LEDGER_LOCK_FILE = "ledger.lock"
DRIVE_LOCK_FILE = "drive.lock"
INTAKE_DIR = "intake"
FEATURES_DIR = "features"
CYCLES_DIR = "cycles"
CYCLE_FILE = "cycle.json"
ROLES_DIR = "roles"
RUNS_DIR = "runs"
TURNS_DIR = "turns"
TURN_OUTPUTS_DIR = "outputs"
WORKTREES_DIR = "worktrees"
SPIKES_DIR = "spikes"
SPIKE_NOTES_FILE = "notes.md"
SPIKE_CHECKOUTS = "_spikes"  # beside the features' checkouts; no feature id starts with "_"
EXPERIMENT_CHECKOUTS = "_experiments"  # the approaches' checkouts, beside the spikes'
DB_DIR = "db"
PROCESS_DIR = "run"
CLAUDE_MANIFEST_FILE = "claude-manifest.json"

COMMITTED_FOLDERS = (INTAKE_DIR, FEATURES_DIR, CYCLES_DIR, TURNS_DIR, ROLES_DIR)
"""The folders `consort init` creates (turns/ is made at once so agents' scope rules can name
it, though it is ignored)."""

IGNORED = (
    f"{STATE_DIR}/{DB_DIR}/",
    f"{STATE_DIR}/{PROCESS_DIR}/",
    f"{STATE_DIR}/{TURNS_DIR}/",
    f"{STATE_DIR}/{RUNS_DIR}/",
    f"{STATE_DIR}/{WORKTREES_DIR}/",
    f"{STATE_DIR}/*.lock",
)
"""What `consort init` puts in the project's .gitignore, in this order."""


@dataclass(frozen=True)
class Layout:
    """The paths of one project's state folder, given the folder (`<root>/.consort`)."""

    state_dir: Path

    @classmethod
    def of(cls, root: Path) -> Layout:
        """The layout of the project at `root`."""
        return cls(root / STATE_DIR)

    @property
    def ledger(self) -> Path:
        return self.state_dir / LEDGER_FILE

    @property
    def ledger_lock(self) -> Path:
        return self.state_dir / LEDGER_LOCK_FILE

    @property
    def drive_lock(self) -> Path:
        return self.state_dir / DRIVE_LOCK_FILE

    @property
    def intake(self) -> Path:
        return self.state_dir / INTAKE_DIR

    @property
    def features(self) -> Path:
        return self.state_dir / FEATURES_DIR

    def feature(self, feature: str) -> Path:
        """A feature's design artifacts."""
        return self.features / feature

    @property
    def cycles(self) -> Path:
        return self.state_dir / CYCLES_DIR

    def cycle_record(self, feature: str, story: str, item: str) -> Path:
        """One cycle's stages and their evidence, for people."""
        return self.cycles / feature / story / item / CYCLE_FILE

    @property
    def roles(self) -> Path:
        return self.state_dir / ROLES_DIR

    def role_prompt(self, role: str) -> Path:
        """A role prompt the project overrides."""
        return self.roles / f"{role}.md"

    @property
    def runs(self) -> Path:
        return self.state_dir / RUNS_DIR

    @property
    def turns(self) -> Path:
        return self.state_dir / TURNS_DIR

    def turn(self, name: str) -> Path:
        """A turn's folder, `<NNNN>-<role>-<step>`."""
        return self.turns / name

    def turn_output(self, turn: str, filename: str) -> Path:
        """Where a turn writes one of its declared outputs."""
        return self.turn(turn) / TURN_OUTPUTS_DIR / filename

    @property
    def worktrees(self) -> Path:
        return self.state_dir / WORKTREES_DIR

    def worktree(self, feature: str, checkout: str) -> Path:
        """A checkout of one of the feature's branches (a story's, or the feature's own)."""
        return self.worktrees / feature / checkout

    @property
    def spikes(self) -> Path:
        return self.state_dir / SPIKES_DIR

    def spike_notes(self, name: str) -> Path:
        """What an ended spike learned: kept (and committed) when its code and database go."""
        return self.spikes / name / SPIKE_NOTES_FILE

    def experiment_worktree(self, cycle: str, number: int, approach: str) -> Path:
        """One approach's checkout (`cycle` is `<F>/<S>/<T>`); removed when it is selected or
        archived."""
        return self.worktrees / EXPERIMENT_CHECKOUTS / f"{cycle}-{number}" / approach

    def spike_worktree(self, name: str) -> Path:
        """A running spike's checkout; removed when the spike ends."""
        return self.worktrees / SPIKE_CHECKOUTS / name

    @property
    def db(self) -> Path:
        """Private database state: cluster location, secret. Never committed."""
        return self.state_dir / DB_DIR

    @property
    def claude_manifest(self) -> Path:
        """What `consort init` wrote for Claude Code, so that updates know what is theirs."""
        return self.state_dir / CLAUDE_MANIFEST_FILE
