"""`consort verify`: re-check everything the ledger claims, from the files themselves."""

from __future__ import annotations

from dataclasses import dataclass, field

from consort.core.artifacts.canonical import artifact_hash
from consort.core.artifacts.registry import ArtifactKind
from consort.core.derive import derive, turn_output
from consort.core.ledger import EventType, Ledger, ledger_path
from consort.core.project import Project
from consort.core.state import GateStatus


@dataclass
class VerifyReport:
    holds: list[str] = field(default_factory=list)
    fails: list[str] = field(default_factory=list)

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
    evidence = 0
    for event in events:
        if event.type is not EventType.ARTIFACT_ACCEPTED or event.data.get("source") != "turn":
            continue
        kind = ArtifactKind(str(event.data["kind"]))
        output = turn_output(project.state_dir, str(event.data["turn"]), kind)
        if not output.is_file():
            report.fails.append(f"event {event.seq}: the accepted output {output} is missing")
        elif artifact_hash(output) != event.data["hash"]:
            report.fails.append(f"event {event.seq}: {output} no longer matches the accepted hash")
        else:
            evidence += 1
    report.holds.append(f"turn outputs: {evidence} accepted artifacts match their recorded hashes")
    from consort.lanes.verify.cycles import verify_cycles

    cycle_holds, cycle_fails = verify_cycles(project, events)
    report.holds += cycle_holds
    report.fails += cycle_fails
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
