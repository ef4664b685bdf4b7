"""How `consort status` looks on a terminal."""

from __future__ import annotations

from consort.app.status import FeatureLine, StatusReport
from consort.cli import ui


def gates_cell(feature: FeatureLine) -> str:
    """The feature's gates in order, up to the first one not approved: the gates after it are
    not reached either, and saying so for each would only crowd the table."""
    shown = []
    for name, phase in (
        ("design", feature.design_gate),
        ("deploy", feature.deploy_gate),
        ("promote", feature.promote_gate),
    ):
        shown.append(f"{name} {phase}")
        if phase != "approved":
            break
    return "; ".join(shown)


def render_status(report: StatusReport) -> None:
    if not report.features:
        ui.say("no features yet: `consort intake feature --file request.md`")
    else:
        ui.table(
            "Features",
            [ui.Col("feature", whole=True), "title", "lane", "gates", "next", "artifacts"],
            [
                [
                    f.id,
                    f.title,
                    f.lane,
                    gates_cell(f),
                    f.next,
                    ", ".join(f"{k}: {v}" for k, v in f.artifacts.items()),
                ]
                for f in report.features
            ],
        )
    if report.stories:
        ui.table(
            "Stories",
            [
                ui.Col("feature", whole=True),
                ui.Col("story", whole=True),
                "cycles",
                "now",
                "acceptance",
            ],
            [
                [s.feature, s.story, f"{s.cycles_done}/{s.cycles}", s.current, s.gate]
                for s in report.stories
            ],
        )
    if report.sandbox_warning:
        ui.warn(report.sandbox_warning)
    for escalation in report.escalations:
        ui.warn(
            f"escalation on {escalation['feature']} ({escalation['step']}): {escalation['reason']}"
        )
        ui.say(f"  resolve: {escalation['command']}")
    for spike in report.spikes:
        if spike["condition"] == "expired":
            ui.warn(
                f"spike {spike['name']} has run out of time: "
                "`consort spike gc` removes it and keeps its notes"
            )
        else:
            ui.say(f"spike {spike['name']} running in {spike['worktree']} until {spike['expires']}")
    for experiment in report.experiments:
        if experiment["condition"] in ("running", "waiting"):
            from consort.cli.experiment import render_comparison

            render_comparison(experiment)
    if report.branches:
        ui.table(
            "Branches",
            ["", ui.Col("branch", whole=True), "database", ui.Col("parent", whole=True), "size"],
            [
                [
                    "*" if b["current"] else "",
                    str(b["name"]),
                    str(b["database"] or "-"),
                    str(b["parent"] or "-"),
                    ui.megabytes(_bytes(b["size_bytes"])),
                ]
                for b in report.branches
            ],
        )
    elif report.branch_problem:
        ui.warn(f"branches: {report.branch_problem}")


def _bytes(value: object) -> int | None:
    return value if isinstance(value, int) else None
