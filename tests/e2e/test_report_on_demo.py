"""`consort report` on the finished demo: its sums against the ledger's own lines."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import DEMO_TIMEOUT_S
from tests.helpers import consort, ok

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2 * DEMO_TIMEOUT_S)]
RUN_EVENTS = ("red.", "green.", "refactor.", "deploy.", "story.merged", "feature.promoted")


def test_the_report_adds_up_the_ledger(demo):
    root, _ = demo
    lines = [json.loads(x) for x in (root / ".consort/ledger.jsonl").read_text().splitlines()]
    turns = [e for e in lines if e["type"] in ("turn.finished", "turn.failed")]
    runs = [e for e in lines if e["type"].startswith(RUN_EVENTS) and "run" in e["data"]]
    outcome = json.loads(ok(consort("report", "--json", cwd=root)))
    total = outcome["total"]
    assert total["turns"] == len(turns) == len(outcome["turns"])
    assert total["test_runs"] == len(runs)
    expected = sum(
        e["data"]["run"].get(k) or 0
        for e in runs
        for k in ("test_seconds", "overhead_seconds", "migrate_seconds")
    )
    assert total["test_seconds"] == pytest.approx(expected, abs=0.01)
    lanes = {row["name"]: row for row in outcome["lanes"]}
    assert list(lanes) == ["design", "build", "deploy", "promote"]
    assert lanes["design"]["turns"] == 5  # the demo's feature is user-facing: five roles
    assert sum(row["turns"] for row in outcome["roles"]) == total["turns"]
    text = ok(consort("report", "--turns", cwd=root))
    assert "Per lane" in text and "Per role" in text and "0001-spec-author-spec" in text
