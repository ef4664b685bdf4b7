"""An experiment on the dashboard, in a real Chromium: two approaches to StockFlow's first cycle
(command agents in the real sandbox, real sealed runs), shown side by side with the
recommendation and the command a person runs to select; then a selection made at the terminal
while the page is open, which the page shows from the live ledger."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import artefacts
from tests.dashboard_process import running_dashboard
from tests.helpers import consort, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_experiments import SUBJECT, approach, stockflow

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]
WAIT_MS = 120_000  # only a hang fails: a loaded machine is slow, never wrong


@pytest.fixture(scope="module")
def raced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("experiment-page") / "stockflow"
    try:
        stockflow(root, approach("honest", "honest") + approach("never", "never"), concurrency=2)
        result = consort("experiment", "F1/S1", "--approaches", "2", cwd=root, timeout=900)
        assert result.returncode == 0, result.stdout + result.stderr
        yield root
    finally:
        destroy_project_cluster(root)


def test_the_page_shows_the_approaches_side_by_side_and_then_the_selection(raced, browser: Any):
    root = raced
    with running_dashboard(root, terminal=False) as dash:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            tab = context.new_page()
            errors: list[str] = []
            tab.on("pageerror", lambda error: errors.append(str(error)))
            tab.goto(dash.url)
            tab.wait_for_selector("body[data-loaded]", timeout=WAIT_MS)
            tab.wait_for_selector("#live.ok", timeout=WAIT_MS)
            card = tab.locator(f'.experiment[data-subject="{SUBJECT}"]')
            assert card.get_attribute("data-condition") == "waiting"
            honest = card.locator('tr[data-approach="honest"]')
            never = card.locator('tr[data-approach="never"]')
            cells = [c.strip() for c in honest.locator("td").all_inner_texts()]
            assert cells[:4] == ["honest", "passed", cells[2], "1"]
            passed, total = (int(n) for n in cells[2].split("/"))
            assert passed == total > 0
            assert "recommended" in (honest.get_attribute("class") or "")
            assert "cycles-spent" in never.inner_text()
            assert "recommended" not in (never.get_attribute("class") or "")
            # The schema diff against the parent, opened on the page.
            honest.locator("details summary").click()
            assert "skus" in honest.locator("details pre").inner_text()
            assert "Recommendation: winner — honest" in card.inner_text()
            commands = card.locator(".commands code").all_inner_texts()
            assert commands[0] == "consort experiment select F1/S1 honest"
            assert "await-experiment" in tab.locator("#next").inner_text()
            tab.screenshot(path=str(artefacts() / "experiment-waiting.png"), full_page=True)

            # A person selects at the terminal; the open page shows it from the live ledger.
            ok(consort("experiment", "select", "F1/S1", "honest", cwd=root))
            tab.wait_for_selector(
                f'.experiment[data-subject="{SUBJECT}"][data-condition="selected"]',
                timeout=WAIT_MS,
            )
            assert "selected: honest" in card.inner_text()
            assert card.locator(".commands").count() == 0
            assert "await-experiment" not in tab.locator("#next").inner_text()
            view = json.loads(tab.evaluate("fetch('/api/overview').then(r => r.text())"))
            (shown,) = view["status"]["experiments"]
            assert shown["selected"] == "honest" and shown["commands"] == []
            tab.screenshot(path=str(artefacts() / "experiment-selected.png"), full_page=True)
            assert errors == []
        finally:
            context.close()
