"""The VS Code extension's panel, in a real Chromium, without VS Code: the document the extension
builds (the dashboard's own page under the panel's strict policy, with the bridge script), its
messages carried by the extension's real PageSession (editors/vscode/test/harness) to the real
`consort dashboard --editor` on a project waiting at its design gate. The page renders and
follows the ledger through the bridge, with no policy violation; a decision not confirmed in the
editor is never sent; a confirmed one is recorded as the person's; the token never reaches the
page. What stands in for VS Code is only `acquireVsCodeApi` and the delivery of its messages."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import artefacts
from tests.integration.test_dashboard import at_design_gate, ledger_lines  # noqa: F401
from tests.integration.test_design_lane import KEY
from tests.integration.test_vscode_extension import EXTENSION, _node, built  # noqa: F401

pytestmark = pytest.mark.integration
WAIT_S = 120  # only a hang fails
PANEL_URL = "http://webview.invalid/"  # answered by the test itself, never looked up

VSCODE_API = """
window.acquireVsCodeApi = () => ({
  postMessage: (message) => window.__toExtension(JSON.stringify(message)),
  getState: () => undefined,
  setState: () => undefined,
});
"""


class Host:
    """The harness process: the extension's side of one panel."""

    def __init__(self, project: Path, confirm: str) -> None:
        env = {k: v for k, v in os.environ.items() if k != "CONSORT_TASK"}
        env.update(
            CONSORT_BIN=str(Path(sys.executable).parent / "consort"),
            CONSORT_TEST_PROJECT=str(project),
            HARNESS_CONFIRM=confirm,
        )
        self.process = subprocess.Popen(
            [_node(), str(EXTENSION / "out" / "test" / "harness" / "webviewHost.js")],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def send(self, data: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(data) + "\n")
        self.process.stdin.flush()

    def next(self) -> dict[str, Any]:
        try:
            return self.lines.get(timeout=WAIT_S)
        except queue.Empty:
            assert self.process.stderr is not None
            raise AssertionError("the harness said nothing") from None

    def close(self) -> dict[str, Any] | None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        stopped = None
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                said = self.lines.get(timeout=1)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            if said["type"] == "stopped":
                stopped = said
                break
        self.process.wait(timeout=WAIT_S)
        return stopped


class Panel:
    """A tab showing the extension's document, its messages pumped to and from the host."""

    def __init__(self, browser: Any, host: Host) -> None:
        self.host = host
        self.asked: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.tab = self.context.new_page()
        self.tab.on("pageerror", lambda error: self.errors.append(str(error)))
        self.tab.on(
            "console",
            lambda message: (
                self.errors.append(message.text) if message.type in ("error", "warning") else None
            ),
        )
        self.tab.expose_function(
            "__toExtension", lambda text: host.send({"message": json.loads(text)})
        )
        self.tab.add_init_script(VSCODE_API)
        document = host.next()
        assert document["type"] == "document", document
        assert document["holdsToken"] is True
        self.html = document["html"]
        # served at an origin of its own, as a webview is: the document, and nothing else
        self.tab.route(
            f"{PANEL_URL}**",
            lambda route: route.fulfill(body=self.html, content_type="text/html"),
        )
        self.tab.goto(PANEL_URL)

    def pump(self) -> None:
        """Deliver what the host said, as VS Code delivers a webview's messages."""
        while True:
            try:
                said = self.host.lines.get_nowait()
            except queue.Empty:
                return
            self._deliver(said)

    def _deliver(self, said: dict[str, Any]) -> None:
        """One message from the host: to the page, or noted as a question the editor asked."""
        if said["type"] == "host":
            self.tab.evaluate("m => window.postMessage(m, '*')", said["message"])
        elif said["type"] == "asked":
            self.asked.append(said)
        else:
            raise AssertionError(f"unexpected from the host: {said}")

    def until(self, check: str) -> None:
        """Pump messages until the page's script expression `check` is true."""
        deadline = time.monotonic() + WAIT_S
        while not self.tab.evaluate(check):
            assert time.monotonic() < deadline, f"never true: {check}\n{self.errors}"
            self.pump()
            self.tab.wait_for_timeout(50)

    def holds_token(self, text: str) -> bool:
        self.pump()
        self.host.send({"type": "holds-token?", "text": text})
        while True:
            said = self.host.next()
            if said["type"] == "holds-token":
                return bool(said["answer"])
            # not the answer: delivered in the order it came. Putting it back in the queue and
            # pumping raced with the answer arriving behind it, which pump() then refused.
            self._deliver(said)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def panel(browser: Any, built: Path, at_design_gate: Path) -> Iterator[Panel]:  # noqa: F811
    host = Host(at_design_gate, confirm="no,yes")
    try:
        shown = Panel(browser, host)
        try:
            yield shown
        finally:
            shown.close()
    finally:
        stopped = host.close()
        assert stopped is not None and stopped["code"] == 0, "the dashboard stops with the panel"


def test_the_panel_shows_the_dashboard_and_decides_through_the_editor(panel, at_design_gate):  # noqa: F811
    panel.until("document.body.dataset.loaded !== undefined")
    panel.until("document.getElementById('live').classList.contains('ok')")
    panel.until("document.querySelectorAll('#events li').length > 0")
    tab = panel.tab
    assert KEY in tab.locator(f'.feature[data-feature="{KEY}"]').inner_text()
    assert "The editor holds this dashboard's token" in tab.locator("#read-only").inner_text()
    assert tab.locator("#token-form").is_hidden()
    approve = tab.locator(f'.pending[data-subject="{KEY}"] button.approve')
    assert approve.is_enabled()
    tab.screenshot(path=str(artefacts() / "vscode-panel.png"), full_page=True)

    approve.click()  # the person says no in the editor's dialog: nothing is sent
    panel.until("document.getElementById('decision-result').textContent.startsWith('refused')")
    assert "not confirmed in the editor" in tab.locator("#decision-result").inner_text()
    assert not [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]

    tab.locator(f'.pending[data-subject="{KEY}"] input').fill("approved in the panel")
    tab.locator(f'.pending[data-subject="{KEY}"] button.approve').click()  # and now yes
    panel.until("document.getElementById('decision-result').className === 'ok'")
    assert [a["answer"] for a in panel.asked] == ["no", "yes"]
    assert panel.asked[1]["decision"]["note"] == "approved in the panel"
    (approval,) = [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]
    assert approval["actor"] == "human" and approval["subject"] == KEY
    # the approval arrives on the live feed and the page redraws: no gate waits any more
    panel.until("document.querySelector('#events li[data-type=\"gate.approved\"]') !== null")
    panel.until("document.getElementById('pending').textContent.includes('No gate is waiting')")
    tab.screenshot(path=str(artefacts() / "vscode-panel-approved.png"), full_page=True)

    panel.until("document.getElementById('verify').classList.contains('ok')")
    assert tab.locator("#verify").inner_text() == "verify: holds"
    assert not panel.holds_token(panel.html), "the document holds the token"
    assert not panel.holds_token(tab.content()), "the page holds the token"
    assert panel.errors == []  # no script error, no policy violation
