"""What a person sees before deciding a gate: what is approved, not only its hashes.

For the design gate, each covered artifact's path, hash and a short readable summary, and the
diff of every artifact changed since the last approval; for a story, the story and its
acceptance criteria, each cycle with its evidence (commits, tests passing, the cycle record),
and the change the story makes; for the release gates, the proof they rest on.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence

from consort.core.artifacts.canonical import JsonSyntaxProblem, parse_json_text
from consort.core.artifacts.registry import ArtifactKind, load_artifact
from consort.core.artifacts.summary import summary_lines
from consort.core.derive import artifact_path, turn_output
from consort.core.errors import ConsortError
from consort.core.layout import Layout
from consort.core.ledger import Event
from consort.core.ledger.events import ArtifactAccepted, GateApproved
from consort.core.project import Project
from consort.core.state import FeatureState, GateKind, StoryState

INDENT = "    "
MAX_DIFF_LINES = 80  # per artifact: a longer diff ends with a line saying how much is left out


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


def _changes_since_approval(
    project: Project, events: Sequence[Event], feature: FeatureState, hashes: dict[str, str]
) -> list[str]:
    previous = _previous_approval(events, feature.id)
    if previous is None:
        return ["  This design was never approved before: everything above is new.", ""]
    event, approval = previous
    lines = [f"  Changes since the last approval (event {event.seq}, by the {event.actor.value}):"]
    changed = False
    for step in feature.steps():
        kind = step.artifact.value
        before, now = approval.hashes.get(kind), hashes[kind]
        if before == now:
            continue
        changed = True
        shown = feature.artifacts[step.artifact].path
        if before is None:
            lines.append(f"{INDENT}{shown}: new since then")
            continue
        old = _approved_text(project, events, feature.id, step.artifact, before)
        if old is None:
            lines.append(
                f"{INDENT}{shown}: changed (the approved version is not kept on disk; "
                "`git log -p` shows it if it was committed)"
            )
            continue
        current = _pretty(
            artifact_path(project.state_dir, feature.id, step.artifact).read_text(encoding="utf-8")
        )
        lines += _indented(_diff(old, current, shown))
    if not changed:
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
