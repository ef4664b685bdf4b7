"""Canaries: two tests of Consort's own in every run, so a forged report shows.

Each run gets a fresh random name and nonce. A pytest plugin, written to a private folder outside
the tree and loaded with `-p`, adds two tests to whatever the project's suite collects: one that
must pass and one that must fail with the nonce in its message. A report in which the failing
canary passed, lost its nonce, or either canary is missing was not written by the run as it
happened (a report rewritten afterwards, a runner patched from inside, a suite that never ran):
the attempt fails with a violation. The canaries are then left out of the report Consort reads,
and their outcomes are stored with the run's evidence.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consort.adapters.tdd.junit import CaseResult, JUnitReport, Outcome
from consort.core.seal import SealRule, SealViolation

PLUGIN_TEMPLATE = '''\
"""Consort's canaries for one run; generated, never part of the project."""
import pytest


def _{name}_passes():
    assert "{nonce}"


def _{name}_fails():
    assert False, "{nonce}"


class _{name}Item(pytest.Function):
    pass


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    for label, function in (("passes", _{name}_passes), ("fails", _{name}_fails)):
        items.append(
            _{name}Item.from_parent(
                session, name="test_{name}_" + label, callobj=function
            )
        )
'''


@dataclass(frozen=True)
class Canaries:
    name: str  # random identifier, part of both test names and of the plugin module's name
    nonce: str

    @property
    def module(self) -> str:
        return f"consort_canary_{self.name}"

    @property
    def passing_test(self) -> str:
        return f"test_{self.name}_passes"

    @property
    def failing_test(self) -> str:
        return f"test_{self.name}_fails"

    def write_plugin(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.module}.py"
        path.write_text(PLUGIN_TEMPLATE.format(name=self.name, nonce=self.nonce), encoding="utf-8")
        return path


def fresh_canaries() -> Canaries:
    return Canaries(name=secrets.token_hex(6), nonce=secrets.token_hex(16))


@dataclass(frozen=True)
class CanaryCheck:
    passing: str  # the outcome of each canary, "missing" when absent
    failing: str
    nonce_seen: bool
    violations: tuple[SealViolation, ...]
    report: JUnitReport  # the report without the canaries

    def as_data(self) -> dict[str, Any]:
        return {
            "passing": self.passing,
            "failing": self.failing,
            "nonce_seen": self.nonce_seen,
            "holds": not self.violations,
        }


def check_canaries(report: JUnitReport, canaries: Canaries) -> CanaryCheck:
    """Split the canaries off `report` and say whether they came out as they must."""
    passing: CaseResult | None = None
    failing: CaseResult | None = None
    rest = {}
    for node, case in report.cases.items():
        leaf = node.rsplit("::", 1)[-1]
        if leaf == canaries.passing_test:
            passing = case
        elif leaf == canaries.failing_test:
            failing = case
        else:
            rest[node] = case
    problems = []
    if passing is None or failing is None:
        missing = [
            t
            for t, c in ((canaries.passing_test, passing), (canaries.failing_test, failing))
            if c is None
        ]
        problems.append(f"the report lacks Consort's canary test(s) {', '.join(missing)}")
    if passing is not None and passing.outcome is not Outcome.PASSED:
        problems.append(f"Consort's passing canary came out {passing.outcome.value}")
    nonce_seen = failing is not None and canaries.nonce in failing.message
    if failing is not None:
        if failing.outcome is not Outcome.FAILED:
            problems.append(f"Consort's failing canary came out {failing.outcome.value}")
        elif not nonce_seen:
            problems.append("Consort's failing canary lost its nonce: the report was rewritten")
    violations = tuple(
        SealViolation(SealRule.CANARY_FORGED, "", f"{p}: the report is forged") for p in problems
    )
    cleaned = JUnitReport(rest, report.sha256, report.collection_errors)
    return CanaryCheck(
        passing=passing.outcome.value if passing else "missing",
        failing=failing.outcome.value if failing else "missing",
        nonce_seen=nonce_seen,
        violations=violations,
        report=cleaned,
    )
