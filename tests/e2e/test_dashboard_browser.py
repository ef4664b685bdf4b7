"""The dashboard in a real Chromium: the finished demo rendered, a running `drive` appearing on
the open page, an approval made on the page with the token, and the refusals without it, from
another origin, and of anything an agent or a request wrote that tries to run as script.
Screenshots of the main views are kept as artefacts (tests/browser.py says where)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import artefacts
from tests.dashboard_process import Dashboard, running_dashboard
from tests.e2e.conftest import DEMO_TIMEOUT_S
from tests.helpers import consort, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_dashboard import at_design_gate, ledger_lines  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2 * DEMO_TIMEOUT_S)]
WAIT_MS = 120_000  # only a hang fails: a loaded machine is slow, never wrong


class Page:
    """A browser tab on the dashboard, with the script errors it raised."""

    def __init__(self, browser: Any, dash: Dashboard) -> None:
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.tab = self.context.new_page()
        self.errors: list[str] = []
        self.tab.on("pageerror", lambda error: self.errors.append(str(error)))
        self.tab.goto(dash.url)
        self.tab.wait_for_selector("body[data-loaded]", timeout=WAIT_MS)
        self.tab.wait_for_selector("#live.ok", timeout=WAIT_MS)  # the event stream is open

    def text(self, selector: str) -> str:
        return str(self.tab.locator(selector).first.inner_text())

    def shot(self, name: str) -> Path:
        path = artefacts() / f"{name}.png"
        self.tab.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any) -> Iterator[Any]:
    pages: list[Page] = []

    def open_tab(dash: Dashboard) -> Page:
        pages.append(Page(browser, dash))
        return pages[-1]

    yield open_tab
    for page in pages:
        page.close()


def test_the_page_renders_the_finished_demo(demo, tab):
    root, _ = demo
    with running_dashboard(root, terminal=False) as dash:
        page = tab(dash)
        events = len(ledger_lines(root))
        assert page.text("#ledger") == f"ledger ok · {events} events"
        page.tab.wait_for_selector("#verify.ok", timeout=WAIT_MS)
        assert page.text("#verify") == "verify: holds"
        assert "every feature is done" in page.text("#next") or "done" in page.text("#next")
        feature = page.tab.locator('.feature[data-feature="F1-stock-visibility"]')
        assert "lane done" in feature.inner_text()
        for story in ("S1-file-stock", "S2-stock-by-location", "S3-sku-detail"):
            assert story in feature.inner_text()
        assert page.tab.locator("table.cycles tbody tr").count() == 10  # T1..T10
        assert "green.failed-1" in feature.inner_text()  # the recorded repair
        # who decided and how: every gate of the demo by the proxy policy, none by a person
        assert (
            feature.locator(".last-approval")
            .inner_text()
            .startswith("Last approved by the proxy policy (proxy)")
        )
        deciders = feature.locator("table.decisions tbody tr td:nth-child(5)").all_inner_texts()
        assert deciders and set(deciders) == {"the proxy policy"}
        changes = feature.locator("table.covers .since").evaluate_all(
            "cells => cells.map(c => c.dataset.change)"
        )
        assert changes == ["unchanged"] * 5
        view = json.loads(page.tab.evaluate("fetch('/api/overview').then(r => r.text())"))
        bars = page.tab.locator("#timeline rect").count()
        assert bars == len(view["turns"]) + len(view["runs"]) > 0
        assert page.tab.locator("#per-role rect").count() == len(view["cost_per_role"])
        assert "No gate is waiting." in page.text("#pending")
        assert "Read-only" in page.text("#read-only")
        assert page.tab.locator("#token-form").is_hidden()
        page.tab.locator("#events li").first.wait_for(timeout=WAIT_MS)
        assert page.errors == []
        page.shot("demo-overview")
        feature.screenshot(path=str(artefacts() / "demo-feature.png"))
        page.tab.locator("#timeline").screenshot(path=str(artefacts() / "demo-timeline.png"))


class Attacker:
    """A page on another origin (another port of 127.0.0.1), which knows the leaked token."""

    def __init__(self, dash: Dashboard) -> None:
        body = ATTACK.replace("{{target}}", dash.origin).replace("{{token}}", dash.token or "")
        content = body.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args: object) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


ATTACK = """<!doctype html><html><body>
<form id="f" method="POST" action="{{target}}/api/approve" target="sink"
      enctype="text/plain"><input name='{"gate":"design","subject":"F1","x":"' value='"}'></form>
<iframe name="sink"></iframe>
<script>
window.results = {};
async function attack() {
  const body = JSON.stringify({gate: "design", subject: "F1", note: "from elsewhere"});
  try {
    await fetch("{{target}}/api/approve", {method: "POST", body,
      headers: {"Content-Type": "application/json", "X-Consort-Token": "{{token}}"}});
    window.results.cors = "sent and read";
  } catch (e) { window.results.cors = "blocked"; }
  try {
    await fetch("{{target}}/api/approve", {method: "POST", body, mode: "no-cors",
      headers: {"Content-Type": "text/plain"}});
    window.results.nocors = "sent";
  } catch (e) { window.results.nocors = "blocked"; }
  try {
    const r = await fetch("{{target}}/api/overview");
    window.results.read = "read " + (await r.text()).length;
  } catch (e) { window.results.read = "blocked"; }
  await new Promise((done) => {  // the live feed: an EventSource is a CORS request too
    const feed = new EventSource("{{target}}/api/events?since=0");
    const end = (how) => { window.results.feed ??= how; feed.close(); done(); };
    feed.addEventListener("ledger", () => end("read"));
    feed.onerror = () => end("blocked");
  });
  document.getElementById("f").submit();
  window.results.form = "submitted";
}
attack();
</script></body></html>"""


def test_a_running_drive_shows_up_and_an_approval_needs_the_token_and_this_page(
    at_design_gate,  # noqa: F811
    tab,
    browser,
):
    root = at_design_gate
    with running_dashboard(root, terminal=True) as dash:
        page = tab(dash)
        assert dash.token
        pending = page.tab.locator('.pending[data-gate="design"]')
        assert pending.locator("button.approve").is_disabled()  # no token typed yet
        page.shot("gate-waiting")

        # a running drive appends to the ledger: its lines arrive on the open page
        before = len(ledger_lines(root))
        ok(consort("drive", cwd=root))
        stopped = [e for e in ledger_lines(root)[before:] if e["type"] == "drive.stopped"]
        assert stopped
        page.tab.wait_for_selector(
            f'#events li[data-seq="{stopped[-1]["seq"]}"][data-type="drive.stopped"]',
            timeout=WAIT_MS,
        )

        # forced from this page without the token: refused by the server
        status = page.tab.evaluate(
            """fetch('/api/approve', {method: 'POST', headers: {'Content-Type':
               'application/json'}, body: JSON.stringify({gate: 'design', subject: 'F1'})})
               .then(r => r.status)"""
        )
        assert status == 401

        # another origin that knows the token: the browser and the server refuse it all
        attacker = Attacker(dash)
        try:
            evil = browser.new_page()
            evil.goto(attacker.url)
            evil.wait_for_function("window.results && window.results.form", timeout=WAIT_MS)
            results = evil.evaluate("window.results")
            assert results["cors"] == "blocked"  # the preflight gets no CORS answer
            assert results["read"] == "blocked"  # nor does a read
            assert results["feed"] == "blocked"  # nor the live feed
            evil.wait_for_timeout(1000)  # let the form post and the no-cors post land
            evil.close()
        finally:
            attacker.close()
        assert not [e for e in ledger_lines(root) if e["type"] == "gate.approved"]

        # verify's verdict is on the page, and follows the ledger (checked below)
        page.tab.wait_for_selector("#verify.ok", timeout=WAIT_MS)
        verdict = "document.getElementById('verify-detail').textContent"
        assert "design approval" not in page.tab.evaluate(verdict)

        # the person types the token printed on their terminal and approves
        page.tab.fill("#token", dash.token)
        pending.locator("input[type=text]").fill("looks right on the page")
        pending.locator("button.approve").click()
        page.tab.wait_for_selector("#decision-result.ok", timeout=WAIT_MS)
        assert "gate.approved" in page.text("#decision-result")
        assert "by human" in page.text("#decision-result")
        page.tab.wait_for_selector('#events li[data-type="gate.approved"]', timeout=WAIT_MS)
        pending.wait_for(state="detached", timeout=WAIT_MS)  # the gate no longer waits
        last = page.tab.locator(".feature .last-approval")
        last.filter(has_text="Last approved by a person (human)").wait_for(timeout=WAIT_MS)
        # verify ran again after the approval's event: it now proves that approval too
        proof = page.tab.locator("#verify-detail .ok", has_text="design approval")
        proof.wait_for(state="attached", timeout=WAIT_MS)  # in the folded list of what holds
        assert page.errors == []
        page.shot("gate-approved")

        # a person edits a covered artifact after the approval: the page shows what changed
        path = root / ".consort" / "features" / "F1-stock-visibility" / "test-list.json"
        data = json.loads(path.read_text())
        data["items"][0]["title"] = "a title the approval never saw"
        path.write_text(json.dumps(data, indent=2))
        page.tab.reload()
        page.tab.wait_for_selector("body[data-loaded]", timeout=WAIT_MS)
        changed = page.tab.locator('.since[data-change="changed"]')
        assert changed.count() == 1
        changed.locator("summary").click()
        diff = changed.locator("pre").inner_text()
        assert '+      "title": "a title the approval never saw"' in diff
        assert page.tab.locator('.since[data-change="unchanged"]').count() == 4
        page.shot("gate-changed-since-approval")

        # a paired branch, and its schema diff against its parent on demand
        ok(consort("branch", "create", "feature/x", cwd=root))
        page.tab.reload()
        page.tab.wait_for_selector("body[data-loaded]", timeout=WAIT_MS)
        row = page.tab.locator("#branches tbody tr", has_text="feature/x")
        assert "main" in row.inner_text()  # its parent
        row.locator("button", has_text="schema diff").click()
        shown = json.loads(row.locator("pre").inner_text(timeout=WAIT_MS))
        assert shown == {"base": "main", "branch": "feature/x", "changes": []}
    (approval,) = [e for e in ledger_lines(root) if e["type"] == "gate.approved"]
    assert approval["actor"] == "human"
    assert approval["data"]["note"] == "looks right on the page"


@pytest.fixture
def hostile_titles(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "app"
    try:
        ok(consort("init", str(root), cwd=tmp_path))
        request = tmp_path / "request.md"
        request.write_text('<script>window.pwned = "request"</script>\n\nSee the title.\n')
        title = "<img src=x onerror=\"window.pwned='title'\"><script>window.pwned=1</script>"
        ok(consort("intake", "feature", "--file", str(request), "--title", title, cwd=root))
        yield root
    finally:
        destroy_project_cluster(root)


def test_markup_written_into_the_project_is_shown_as_text_never_run(hostile_titles, tab):
    with running_dashboard(hostile_titles, terminal=False) as dash:
        page = tab(dash)
        page.tab.wait_for_selector(".feature", timeout=WAIT_MS)
        page.tab.locator('#events li[data-type="feature.created"]').wait_for(timeout=WAIT_MS)
        assert page.tab.evaluate("window.pwned === undefined")
        assert "<img src=x onerror=" in page.text(".feature h3")
        assert page.tab.locator(".feature img, .feature script").count() == 0
        assert page.errors == []


WAITING_AGENT = """\
import pathlib, sys, time
release = pathlib.Path(sys.argv[1])
while not release.exists():  # the turn lasts until the test lets it end
    time.sleep(0.05)
sys.exit(1)  # and fails: the drive escalates and stops
"""


@pytest.fixture
def waiting_turn(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A project whose every agent turn waits for a file the test makes, then fails."""
    import sys

    from tests.integration.test_design_lane import intake, write_config

    root = tmp_path / "shop"
    release = tmp_path / "release-the-turn"
    agent = tmp_path / "waiting_agent.py"
    agent.write_text(WAITING_AGENT)
    try:
        ok(consort("init", str(root), cwd=tmp_path))
        write_config(
            root,
            {"default": "command", "command": [sys.executable, str(agent), str(release)]},
            retries=0,
        )
        with (root / "consort.toml").open("a") as config:
            config.write('sandbox = "off"\n')  # the agent waits on a file outside the project
        intake(root, "Stock visibility")
        yield root, release
    finally:
        release.touch()
        destroy_project_cluster(root)


def test_a_drive_still_running_shows_its_turn_on_the_open_page(waiting_turn, tab):
    import subprocess
    import sys

    root, release = waiting_turn
    with running_dashboard(root, terminal=False) as dash:
        page = tab(dash)
        drive = subprocess.Popen(
            [sys.executable, "-m", "consort", "drive"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            page.tab.wait_for_selector('#events li[data-type="turn.started"]', timeout=WAIT_MS)
            # the drive is still running: its turn cannot end before the file below exists
            assert drive.poll() is None
            assert not [e for e in ledger_lines(root) if e["type"] == "drive.stopped"]
            page.shot("drive-running")
        finally:
            release.touch()
            output, _ = drive.communicate(timeout=600)
        assert drive.returncode == 3, output  # escalated: a person's to resolve
        (stopped,) = [e for e in ledger_lines(root) if e["type"] == "drive.stopped"]
        page.tab.wait_for_selector(f'#events li[data-seq="{stopped["seq"]}"]', timeout=WAIT_MS)
        # the escalation, with the command that resolves it
        page.tab.wait_for_selector("#escalations table code", timeout=WAIT_MS)
        command = page.text("#escalations table code")
        assert command.startswith('consort retry F1 --note "..."'), command
        assert "consort retry F1" in output.decode()  # what the drive said at the terminal
        assert page.errors == []
        page.shot("escalation")


STRAYING_AGENT = """\
import pathlib
pathlib.Path("stray-notes.txt").write_text("outside the spec's scope")
"""


@pytest.fixture
def straying_turn(tmp_path: Path) -> Iterator[Path]:
    """A project whose spec turn writes outside its scope, unsandboxed: the check after the turn
    reverts it and records a violation."""
    import sys

    from tests.integration.test_design_lane import intake, write_config

    root = tmp_path / "shop"
    agent = tmp_path / "straying_agent.py"
    agent.write_text(STRAYING_AGENT)
    try:
        ok(consort("init", str(root), cwd=tmp_path))
        write_config(
            root, {"default": "command", "command": [sys.executable, str(agent)]}, retries=0
        )
        with (root / "consort.toml").open("a") as config:
            config.write('sandbox = "off"\n')
        intake(root, "Stock visibility")
        consort("drive", cwd=root)  # escalates: the turn wrote no spec and strayed
        yield root
    finally:
        destroy_project_cluster(root)


def test_a_violation_is_on_the_page(straying_turn, tab):
    root = straying_turn
    (violation,) = [e for e in ledger_lines(root) if e["type"] == "violation.recorded"]
    assert violation["data"]["path"] == "stray-notes.txt"
    assert not (root / "stray-notes.txt").exists()  # reverted
    with running_dashboard(root, terminal=False) as dash:
        page = tab(dash)
        row = page.tab.locator("#violations table tbody tr").first
        cells = row.locator("td").all_inner_texts()
        assert cells[0] == str(violation["seq"])
        assert cells[1] == violation["data"]["turn"] and cells[2] == "spec-author"
        assert cells[3] == "stray-notes.txt" and cells[4] == violation["data"]["change"]
        assert page.errors == []
        page.tab.locator("#violations").screenshot(path=str(artefacts() / "violations.png"))
