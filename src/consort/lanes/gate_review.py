"""What a person sees before deciding a gate: what is approved, not only its hashes.

For the design gate, each covered artifact's path, hash and a short readable summary, and the
diff of every artifact changed since the last approval; for a story, the story and its
acceptance criteria, each cycle with its evidence (commits, tests passing, the cycle record),
and the change the story makes; for the release gates, the proof they rest on.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from consort.core.artifacts.canonical import JsonSyntaxProblem, parse_json_text, sha256_canonical
from consort.core.artifacts.registry import ArtifactKind, load_artifact
from consort.core.artifacts.summary import summary_lines
from consort.core.derive import artifact_path, turn_output
from consort.core.errors import ConsortError
from consort.core.layout import Layout
from consort.core.ledger import Event, format_time
from consort.core.ledger.events import ArtifactAccepted, GateApproved
from consort.core.project import Project
from consort.core.state import FeatureState, GateKind, StoryState

INDENT = "    "
MAX_DIFF_LINES = 80  # per artifact: a longer diff ends with a line saying how much is left out
COMMITS_SEARCHED = 200  # of an artifact's history, for the version a gate approved


def _indented(lines: Sequence[str], prefix: str = INDENT) -> list[str]:
    return [prefix + line for line in lines]


def _previous_approval(events: Sequence[Event], feature: str) -> tuple[Event, GateApproved] | None:
    found = None
    for event in events:
        payload = event.payload
        if (
            event.subject == feature
            and isinstance(payload, GateApproved)
            and payload.gate is GateKind.DESIGN
        ):
            found = (event, payload)
    return found


def _approved_text(
    project: Project, events: Sequence[Event], feature: str, kind: ArtifactKind, digest: str
) -> str | None:
    """The content that was approved as `digest`, from the turn output it was accepted from."""
    for event in reversed(events):
        payload = event.payload
        if (
            event.subject == feature
            and isinstance(payload, ArtifactAccepted)
            and payload.kind is kind
            and payload.hash == digest
            and payload.turn is not None
        ):
            path = turn_output(project.state_dir, payload.turn, kind)
            if path.is_file():
                return _pretty(path.read_text(encoding="utf-8"))
    # turn folders are not committed: on a fresh clone the approved version is in git's history
    return _committed_text(project, artifact_path(project.state_dir, feature, kind), digest)


def _committed_text(project: Project, path: Path, digest: str) -> str | None:
    """The version of `path` committed with hash `digest`, among its latest commits."""
    from consort.adapters.vcs import Git

    git = Git(project.root)
    listed = git.run(
        "log", f"--max-count={COMMITS_SEARCHED}", "--format=%H", "--", str(path), check=False
    )
    if not listed.ok:
        return None  # not a git checkout, or nothing committed yet
    shown = path.relative_to(project.root).as_posix()
    for commit in listed.stdout.split():
        blob = git.run("show", f"{commit}:./{shown}", check=False)
        if not blob.ok:
            continue
        try:
            if sha256_canonical(parse_json_text(blob.stdout)) == digest:
                return _pretty(blob.stdout)
        except (JsonSyntaxProblem, ValueError):
            continue
    return None


def _pretty(text: str) -> str:
    """JSON as it is compared: sorted keys, two-space indents (a re-indent is no change)."""
    try:
        return json.dumps(parse_json_text(text), indent=2, sort_keys=True, ensure_ascii=False)
    except JsonSyntaxProblem:
        return text


def _diff(before: str, after: str, shown: str) -> list[str]:
    lines = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            f"{shown} (approved)",
            f"{shown} (now)",
            lineterm="",
        )
    )
    if len(lines) > MAX_DIFF_LINES:
        left = len(lines) - MAX_DIFF_LINES
        lines = [*lines[:MAX_DIFF_LINES], f"... {left} more line(s) of diff"]
    return lines


def design_review(
    project: Project, events: Sequence[Event], feature: FeatureState, hashes: dict[str, str]
) -> str:
    """The question the design gate asks, with what it covers."""
    lines = [f"Approve the design of {feature.id} ({feature.title})?", ""]
    for step in feature.steps():
        artifact = feature.artifacts[step.artifact]
        lines.append(f"  {artifact.path}")
        lines.append(f"{INDENT}sha256 {hashes[step.artifact.value]}")
        path = artifact_path(project.state_dir, feature.id, step.artifact)
        try:
            lines += _indented(summary_lines(load_artifact(step.artifact, path)))
        except ConsortError as exc:
            lines.append(f"{INDENT}(cannot be summarised: {exc.message})")
    lines.append("")
    lines += _changes_since_approval(project, events, feature, hashes)
    return "\n".join(lines) + "\n"


class Change(Enum):
    """How one covered artifact stands against the last design approval."""

    UNCHANGED = "unchanged"
    NEW = "new"  # not covered by that approval
    CHANGED = "changed"  # with the diff from the approved version
    CHANGED_UNSEEN = "changed, approved version not kept"  # turn folders are not committed
    UNREADABLE = "cannot be hashed now"


@dataclass(frozen=True)
class ArtifactChange:
    artifact: ArtifactKind
    path: str
    change: Change
    diff: tuple[str, ...] = ()  # unified, approved -> now, at most MAX_DIFF_LINES (+ a note)

    def as_json(self) -> dict[str, object]:
        return {
            "artifact": self.artifact.value,
            "path": self.path,
            "change": self.change.value,
            "diff": list(self.diff),
        }


@dataclass(frozen=True)
class SinceApproval:
    """What changed in a feature's design since its last approval (whoever made it)."""

    seq: int
    actor: str  # human or proxy
    time: str
    artifacts: tuple[ArtifactChange, ...]

    @property
    def changed(self) -> tuple[ArtifactChange, ...]:
        return tuple(a for a in self.artifacts if a.change is not Change.UNCHANGED)

    def as_json(self) -> dict[str, object]:
        return {
            "seq": self.seq,
            "actor": self.actor,
            "time": self.time,
            "artifacts": [a.as_json() for a in self.artifacts],
        }


def since_approval(
    project: Project,
    events: Sequence[Event],
    feature: FeatureState,
    hashes: Mapping[str, str | None],
) -> SinceApproval | None:
    """Each covered artifact against the last design approval of `feature` (None: never
    approved); `hashes` are the artifacts' hashes now, by kind (None: it cannot be hashed)."""
    previous = _previous_approval(events, feature.id)
    if previous is None:
        return None
    event, approval = previous
    changes = []
    for step in feature.steps():
        kind = step.artifact
        shown = feature.artifacts[kind].path
        before, now = approval.hashes.get(kind.value), hashes.get(kind.value)
        if now is None:
            changes.append(ArtifactChange(kind, shown, Change.UNREADABLE))
        elif before == now:
            changes.append(ArtifactChange(kind, shown, Change.UNCHANGED))
        elif before is None:
            changes.append(ArtifactChange(kind, shown, Change.NEW))
        else:
            old = _approved_text(project, events, feature.id, kind, before)
            if old is None:
                changes.append(ArtifactChange(kind, shown, Change.CHANGED_UNSEEN))
                continue
            path = artifact_path(project.state_dir, feature.id, kind)
            current = _pretty(path.read_text(encoding="utf-8"))
            diff = tuple(_diff(old, current, shown))
            changes.append(ArtifactChange(kind, shown, Change.CHANGED, diff))
    return SinceApproval(event.seq, event.actor.value, format_time(event.time), tuple(changes))


def _changes_since_approval(
    project: Project, events: Sequence[Event], feature: FeatureState, hashes: dict[str, str]
) -> list[str]:
    since = since_approval(project, events, feature, dict(hashes))
    if since is None:
        return ["  This design was never approved before: everything above is new.", ""]
    lines = [f"  Changes since the last approval (event {since.seq}, by the {since.actor}):"]
    for change in since.changed:
        if change.change is Change.NEW:
            lines.append(f"{INDENT}{change.path}: new since then")
        elif change.change is Change.CHANGED_UNSEEN:
            lines.append(
                f"{INDENT}{change.path}: changed (the approved version is not kept on disk; "
                "`git log -p` shows it if it was committed)"
            )
        elif change.change is Change.UNREADABLE:
            lines.append(f"{INDENT}{change.path}: cannot be hashed now")
        else:
            lines += _indented(change.diff)
    if not since.changed:
        lines.append(f"{INDENT}none: every artifact is as it was approved")
    return [*lines, ""]


def story_review(project: Project, feature: FeatureState, story: StoryState) -> str:
    """The question the story gate asks: the story, its cycles and their evidence."""
    lines = [f"Accept story {story.key} of {feature.id}?", ""]
    spec_path = artifact_path(project.state_dir, feature.id, ArtifactKind.FEATURE_SPEC)
    try:
        spec = load_artifact(ArtifactKind.FEATURE_SPEC, spec_path)
    except ConsortError:
        spec = None
    for entry in spec.stories if spec is not None else ():
        if entry.id == story.id:
            lines.append(
                f"  {entry.id} {entry.title}: as {entry.as_a}, I want {entry.i_want}, "
                f"so that {entry.so_that}"
            )
            lines += [
                f"{INDENT}{ac.id} given {ac.given}; when {ac.when}; then {ac.then}"
                for ac in entry.acceptance_criteria
            ]
    lines += [
        "",
        f"  branch {story.branch}"
        + (f", from {story.base_commit[:12]}" if story.base_commit else ""),
    ]
    lines += ["", "  Cycles, each proven by Consort's own test runs:"]
    layout = Layout(project.state_dir)
    for item in story.items:
        lines.append(f"{INDENT}{item.id} {item.title}")
        stages = [
            f"{name} {commit[:12]}"
            for name, commit in (
                ("RED", item.red_commit),
                ("GREEN", item.green_commit),
                ("REFACTOR", item.refactor_commit),
            )
            if commit
        ]
        lines.append(
            f"{INDENT}  {'  '.join(stages) or 'no commit'}; {len(item.passing)} test(s) passing"
        )
        if item.review_reasons:
            lines.append(f"{INDENT}  review: {'; '.join(item.review_reasons)}")
        record = layout.cycle_record(feature.id, story.key, item.id)
        if record.is_file():
            lines.append(f"{INDENT}  evidence: {record.relative_to(project.root)}")
    lines += ["", *_story_change(project, story), ""]
    return "\n".join(lines)


def _story_change(project: Project, story: StoryState) -> list[str]:
    from consort.adapters.vcs import Git

    if story.base_commit is None or story.head is None or story.head == story.base_commit:
        return ["  The story changes no file."]
    stat = Git(project.root).run(
        "diff", "--stat", f"{story.base_commit}..{story.head}", check=False
    )
    if stat.returncode != 0:
        return [f"  Its change: git diff {story.base_commit[:12]}..{story.head[:12]}"]
    shown = stat.stdout.rstrip().splitlines()
    return [
        f"  Its change ({story.base_commit[:12]}..{story.head[:12]}):",
        *_indented(shown),
    ]


def release_review(feature: FeatureState, gate: GateKind) -> str:
    """The question a release gate asks, with the proof it rests on."""
    build = feature.build
    lines = [f"Approve the {gate.value} of {feature.id}?", ""]
    if build is not None:
        merged = [s.key for s in build.stories if s.merged]
        lines.append(
            f"  {build.feature_branch}: {len(merged)} story(ies) merged: {', '.join(merged)}"
        )
        if gate is GateKind.DEPLOY:
            lines.append(
                "  proven on a throwaway copy of the parent database: the migrations, the whole "
                "suite, and the running app's smoke test (`consort log --type deploy`)"
            )
        else:
            lines.append(
                f"  promoting merges {build.feature_branch} into "
                f"{build.base_branch or 'its parent'} and migrates that branch's database"
            )
    return "\n".join(lines) + "\n"
