"""`consort verify`: re-check everything the ledger claims, from the files themselves."""

from __future__ import annotations

from dataclasses import dataclass, field

from consort.core.artifacts.canonical import artifact_hash
from consort.core.derive import derive, turn_output
from consort.core.ledger import Event, EventType, Ledger, ledger_path
from consort.core.ledger.events import ArtifactAccepted, ArtifactSource
from consort.core.project import Project
from consort.core.state import GateStatus


@dataclass
class VerifyReport:
    holds: list[str] = field(default_factory=list)
    fails: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # true, and a person should know

    @property
    def ok(self) -> bool:
        return not self.fails


def verify(project: Project) -> VerifyReport:
    report = VerifyReport()
    path = ledger_path(project.state_dir)
    if not path.exists():
        report.holds.append("no ledger yet: nothing to verify")
        return report
    chain = Ledger(path).verify()
    if not chain.ok:
        report.fails += [f"ledger {problem}" for problem in chain.problems]
        return report
    events = list(chain.events)
    report.holds.append(f"ledger: {len(events)} events, hash chain intact")
    _sandboxes(report, events)
    evidence = _check_turn_outputs(project, events, report)
    report.holds.append(f"turn outputs: {evidence} accepted artifacts match their recorded hashes")
    from consort.lanes.verify.cycles import verify_cycles

    cycle_holds, cycle_fails = verify_cycles(project, events)
    report.holds += cycle_holds
    report.fails += cycle_fails
    from consort.lanes.verify.spikes import verify_spikes

    spike_holds, spike_fails = verify_spikes(project, events)
    report.holds += spike_holds
    report.fails += spike_fails
    from consort.lanes.verify.experiments import verify_experiments

    experiment_holds, experiment_fails = verify_experiments(project, events)
    report.holds += experiment_holds
    report.fails += experiment_fails
    state = derive(events, project.config, project.state_dir)
    for feature in state.features:
        gate = feature.design_gate
        if gate.status is not GateStatus.APPROVED:
            continue
        if gate.drifted:
            for drifted in gate.drifted:
                report.fails.append(
                    f"{feature.id}: {drifted} changed since the design was approved "
                    f"(event {gate.seq})"
                )
        else:
            report.holds.append(
                f"{feature.id}: design approval (event {gate.seq}, by {gate.actor}) matches "
                f"{len(gate.approved_hashes)} artifacts"
            )
    return report


def _check_turn_outputs(project: Project, events: list[Event], report: VerifyReport) -> int:
    """Each accepted turn output still has the hash the ledger accepted; how many do."""
    evidence = 0
    for event in events:
        if event.type is not EventType.ARTIFACT_ACCEPTED:
            continue
        accepted = ArtifactAccepted.of(event)
        if accepted.source is not ArtifactSource.TURN or accepted.kind is None:
            continue
        output = turn_output(project.state_dir, str(accepted.turn), accepted.kind)
        if not output.is_file():
            report.fails.append(f"event {event.seq}: the accepted output {output} is missing")
        elif artifact_hash(output) != accepted.hash:
            report.fails.append(f"event {event.seq}: {output} no longer matches the accepted hash")
        else:
            evidence += 1
    return evidence


def _sandboxes(report: VerifyReport, events: list[Event]) -> None:
    from consort.lanes.verify.sandboxing import sandbox_record

    record = sandbox_record(events)
    report.holds.append(record.summary())
    if (warning := record.warning()) is not None:
        report.warnings.append(warning)
