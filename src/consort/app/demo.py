"""`consort demo`: StockFlow, built feature by feature by the whole ensemble, in about a minute.

The agents are a recorded replay (the playbook shipped with Consort) and the gates are passed by
the human proxy policy — both announced loudly, because that is what makes the demo run without
a model or a person. With a real agent configured the flow is the same.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from consort.core.errors import ExitCode, UsageError
from consort.core.fsutil import atomic_write_text
from consort.core.project import Project
from consort.core.vocabulary import Lane

EXAMPLE = "stockflow"
FEATURE_TITLE = "Stock visibility"
LANES = (Lane.DESIGN, Lane.BUILD, Lane.DEPLOY, Lane.DONE)

Say = Callable[[str], None]


@dataclass
class DemoReport:
    root: Path
    code: ExitCode = ExitCode.OK
    message: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    facts: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "code": int(self.code),
            "message": self.message,
            "seconds": self.seconds,
            "facts": self.facts,
        }


def example_dir() -> Path:
    return Path(str(resources.files("consort") / "examples" / EXAMPLE))


def default_dir(base: Path) -> Path:
    candidate = base / "stockflow-demo"
    number = 2
    while candidate.exists():
        candidate = base / f"stockflow-demo-{number}"
        number += 1
    return candidate


def _config_text(root: Path) -> str:
    """The template's consort.toml, pointed at this interpreter, the replay and the proxy."""
    python = json.dumps(sys.executable)
    text = (root / "consort.toml").read_text(encoding="utf-8")
    text = text.replace('["python", "-m"', f'[{python}, "-m"')
    text = text.replace(
        'mode = "interactive"', 'mode = "proxy"   # the demo: the human proxy decides'
    )
    playbook = json.dumps(str(example_dir() / "playbook"))
    return text.replace(
        "[agents]",
        "[agents]\n# The demo: every agent turn is replayed from StockFlow's recorded playbook.\n"
        f'default = "replay"\ndir = {playbook}',
        1,
    )


def setup(directory: Path | None, say: Say) -> Project:
    from consort.adapters.vcs import Git
    from consort.app.init import init
    from consort.lanes.intake import IntakeKind, record

    root = (directory or default_dir(Path.cwd())).resolve()
    if root.exists() and any(root.iterdir()):
        raise UsageError(f"{root} is not empty", fix="give `consort demo` a new folder")
    say(f"scaffolding StockFlow into {root}")
    init(root, template="python-fastapi")
    atomic_write_text(root / "consort.toml", _config_text(root))
    git = Git(root)
    git.run("add", "consort.toml")
    git.as_consort(
        "commit",
        "-q",
        "-m",
        "Configure the StockFlow demo",
    )
    project = Project(root)
    intake = example_dir() / "intake"
    record(project, IntakeKind.PRODUCT, (intake / "product.md").read_text(encoding="utf-8"))
    record(project, IntakeKind.NFRS, (intake / "nfrs.md").read_text(encoding="utf-8"))
    record(
        project,
        IntakeKind.FEATURE,
        (intake / "F1-stock-visibility.md").read_text(encoding="utf-8"),
        title=FEATURE_TITLE,
        user_facing=True,
    )
    return project


def run(project: Project, say: Say) -> DemoReport:
    from consort.lanes.loop import drive

    report = DemoReport(project.root)
    for lane in LANES:
        started = time.monotonic()
        result = drive(project, until=None if lane is Lane.DONE else lane, progress=say)
        report.seconds[lane.value if lane is not Lane.DONE else "promote"] = (
            time.monotonic() - started
        )
        if result.code is not ExitCode.OK:
            report.code, report.message = result.code, result.message
            return report
        report.message = result.message
    report.facts = facts(project)
    return report


def facts(project: Project) -> dict[str, int]:
    from consort.adapters.paired import PairedBranches
    from consort.adapters.vcs import Git
    from consort.core.ledger import EventType, Ledger, ledger_path
    from consort.core.ledger.events import FeaturePromoted, RefactorVerified

    events = Ledger(ledger_path(project.state_dir)).read()

    def count(kind: EventType) -> int:
        return sum(1 for e in events if e.type is kind)

    promoted = next(
        (FeaturePromoted.of(e) for e in reversed(events) if e.type is EventType.FEATURE_PROMOTED),
        None,
    )
    runs = project.layout.runs
    remaining = [row.name for row in PairedBranches(project).rows() if row.database]
    return {
        "stories": count(EventType.STORY_MERGED),
        "cycles": count(EventType.RED_VERIFIED),
        "commits": int(Git(project.root).out("rev-list", "--count", "HEAD")),
        "tests": len(promoted.run.passing) if promoted and promoted.run else 0,
        "repairs": count(EventType.GREEN_FAILED),
        "refactors": sum(
            1
            for e in events
            if e.type is EventType.REFACTOR_VERIFIED and not RefactorVerified.of(e).unchanged
        ),
        "violations": count(EventType.VIOLATION_RECORDED),
        "branch databases": count(EventType.BRANCH_CREATED),
        "throwaway databases": sum(1 for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else 0,
        "databases left": len(remaining),
    }
