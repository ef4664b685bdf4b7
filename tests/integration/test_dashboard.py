"""`consort dashboard` over real HTTP: a real child process on 127.0.0.1 serving a real project
waiting at its design gate (recorded replay turns, interactive gates)."""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.dashboard_process import Dashboard, running_dashboard
from tests.helpers import consort, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_design_lane import KEY, RECORDING, intake, write_config

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def at_design_gate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("dash") / "shop"
    try:
        ok(consort("init", str(root), cwd=root.parent))
        write_config(root, {"default": "replay", "dir": str(RECORDING)})
        assert intake(root, "Stock visibility") == KEY
        assert f"consort approve design {KEY}" in ok(consort("drive", cwd=root))
        yield root
    finally:
        destroy_project_cluster(root)


def ledger_lines(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / ".consort/ledger.jsonl").read_text().splitlines()]


class EventStream:
    """The page's live feed, read by a thread: each `event: ledger` message's data, in order."""

    def __init__(self, dashboard: Dashboard, since: int) -> None:
        self.events: queue.Queue[dict] = queue.Queue()
        self.opened = threading.Event()
        self.client = dashboard.client()
        self.thread = threading.Thread(target=self._read, args=(since,), daemon=True)
        self.thread.start()
        assert self.opened.wait(120), "the event stream did not open"

    def _read(self, since: int) -> None:
        kind = None
        try:
            with self.client.stream("GET", f"/api/events?since={since}") as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                self.opened.set()
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        kind = line.removeprefix("event: ")
                    elif line.startswith("data: ") and kind == "ledger":
                        self.events.put(json.loads(line.removeprefix("data: ")))
        except httpx.HTTPError:
            return  # closed by the test

    def next_of(self, event_type: str) -> dict:
        while True:
            event = self.events.get(timeout=120)
            if event["type"] == event_type:
                return event

    def close(self) -> None:
        self.client.close()


def test_it_listens_on_127_0_0_1_only(at_design_gate):
    with running_dashboard(at_design_gate, terminal=False) as dash:
        listening = [
            line.split()
            for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
            if line.split()[3] == "0A"  # LISTEN
        ]
        ours = [fields[1] for fields in listening if int(fields[1].split(":")[1], 16) == dash.port]
        assert ours == ["0100007F:" + format(dash.port, "04X")]  # 127.0.0.1, nothing else
        assert not Path("/proc/net/tcp6").exists() or format(dash.port, "04X") not in [
            line.split()[1].split(":")[1]
            for line in Path("/proc/net/tcp6").read_text().splitlines()[1:]
        ]
        with pytest.raises(OSError), socket.create_connection(("127.0.0.2", dash.port), 10):
            pass  # another loopback address: nothing listens there


def test_the_page_and_its_views_without_a_terminal_are_read_only(at_design_gate):
    with running_dashboard(at_design_gate, terminal=False) as dash:
        assert dash.token is None and "Read-only" in dash.text()
        with dash.client() as client:
            page = client.get("/")
            assert page.status_code == 200 and "<title>Consort dashboard</title>" in page.text
            assert "default-src 'self'" in page.headers["content-security-policy"]
            assert page.headers["x-frame-options"] == "DENY"
            assert client.get("/static/app.js").status_code == 200
            view = client.get("/api/overview").json()
        assert view["decisions_allowed"] is False
        assert "terminal" in view["read_only_reason"]
        (feature,) = view["features"]
        assert feature["id"] == KEY and feature["lane"] == "design"
        assert feature["pending_gate"] == {
            "gate": "design",
            "subject": KEY,
            "command": f"consort approve design {KEY}",
        }
        covers = {c["artifact"]: c for c in feature["gates"]["design"]["covers"]}
        assert set(covers) == {"feature-spec", "architecture", "db-design", "test-list", "ux"}
        assert all(c["condition"] == "accepted" and c["summary"] for c in covers.values())
        assert covers["feature-spec"]["path"].endswith("feature-spec.json")
        assert [t["role"] for t in view["turns"]] == [
            "spec-author",
            "architect",
            "dba",
            "test-strategist",
            "ux-designer",
        ]
        assert view["ledger"] == {
            "events": len(ledger_lines(at_design_gate)),
            "ok": True,
            "problems": [],
        }
        refused = dash.decide("approve", {"gate": "design", "subject": KEY}, token="guess")
        assert refused.status_code == 403 and refused.json()["refused"] == "READ_ONLY"
    assert not [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]


def test_verify_and_branch_views_answer_what_the_cli_answers(at_design_gate):
    with running_dashboard(at_design_gate, terminal=False) as dash, dash.client() as client:
        verdict = client.get("/api/verify").json()
        expected = json.loads(consort("verify", "--json", cwd=at_design_gate).stdout)
        assert verdict == expected and verdict["ok"] is True
        shown = client.get("/api/overview").json()["status"]
        cli = json.loads(consort("status", "--json", cwd=at_design_gate).stdout)
        for part in ("features", "stories", "escalations", "spikes", "experiments"):
            assert shown[part] == cli[part], part
        assert shown["unsandboxed_turns"] == cli["unsandboxed_turns"]
        missing = client.get("/api/branch-diff", params={"name": "no-such-branch"})
        assert missing.status_code == 400 and "no-such-branch" in missing.json()["error"]


def test_a_ledger_append_arrives_as_a_server_sent_event(at_design_gate):
    with running_dashboard(at_design_gate, terminal=False) as dash:
        seen = len(ledger_lines(at_design_gate))
        stream = EventStream(dash, since=seen)
        try:
            request = at_design_gate.parent / "second.md"
            request.write_text("Reorder alerts\n\nTell me when a SKU runs low.\n")
            ok(
                consort(
                    "intake",
                    "feature",
                    "--file",
                    str(request),
                    "--title",
                    "Reorder alerts",
                    cwd=at_design_gate,
                )
            )
            event = stream.next_of("feature.created")
            assert event["seq"] > seen
            assert event == ledger_lines(at_design_gate)[event["seq"] - 1]  # the line as stored
        finally:
            stream.close()


def test_the_feed_replays_from_the_seq_it_is_given(at_design_gate):
    with running_dashboard(at_design_gate, terminal=False) as dash:
        stream = EventStream(dash, since=0)
        try:
            first = stream.events.get(timeout=120)
            assert first["seq"] == 1 and first["type"] == "project.initialised"
        finally:
            stream.close()


def test_approving_needs_the_token_and_the_pages_own_origin(at_design_gate):
    design = {"gate": "design", "subject": KEY, "note": "approved on the page"}
    with running_dashboard(at_design_gate, terminal=True) as dash:
        token = dash.token
        assert token and len(token) >= 32
        assert dash.client().get("/api/overview").json()["decisions_allowed"] is True
        # A different last character, whatever the token's own last character is.
        wrong_token = token[:-1] + ("y" if token.endswith("x") else "x")
        attempts = {
            "no token": dash.decide("approve", design),
            "wrong token": dash.decide("approve", design, token=wrong_token),
            "token in the URL": dash.decide("approve", design, query=f"?token={token}"),
            "another origin": dash.decide(
                "approve", design, token=token, origin="http://evil.example"
            ),
            "no origin": dash.decide("approve", design, token=token, origin=None),
            "a form post": dash.decide(
                "approve", design, token=token, content_type="application/x-www-form-urlencoded"
            ),
        }
        statuses = {why: response.status_code for why, response in attempts.items()}
        assert statuses == {
            "no token": 401,
            "wrong token": 401,
            "token in the URL": 401,
            "another origin": 403,
            "no origin": 403,
            "a form post": 415,
        }
        assert not [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]

        approved = dash.decide("approve", design, token=token)
        assert approved.status_code == 200, approved.text
        assert approved.json()["type"] == "gate.approved" and approved.json()["actor"] == "human"
        view = dash.client().get("/api/overview").json()
        assert view["features"][0]["gates"]["design"]["status"] == "approved"
        assert view["features"][0]["gates"]["design"]["actor"] == "human"

        output = dash.text()
    (approval,) = [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]
    assert approval["actor"] == "human"  # recorded as a person's, like one at the terminal
    assert approval["data"]["note"] == "approved on the page"
    assert set(approval["data"]["hashes"]) == {
        "feature-spec",
        "architecture",
        "db-design",
        "test-list",
        "ux",
    }
    assert output.count(token) == 1  # printed once, where it started; never logged after
    assert "design approval" in ok(consort("verify", cwd=at_design_gate))


def test_an_edit_after_the_approval_shows_as_its_diff_and_who_approved(at_design_gate):
    # after the page's approval (the test above makes it; alone, this test makes its own)
    if not [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]:
        with running_dashboard(at_design_gate, terminal=True) as dash:
            design = {"gate": "design", "subject": KEY}
            assert dash.decide("approve", design, token=dash.token).status_code == 200
    (approval,) = [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]
    # then a person edits a covered artifact by hand
    path = at_design_gate / ".consort" / "features" / KEY / "test-list.json"
    data = json.loads(path.read_text())
    old_title = data["items"][0]["title"]
    data["items"][0]["title"] = "a title the approval never saw"
    path.write_text(json.dumps(data, indent=2))
    with running_dashboard(at_design_gate, terminal=False) as dash, dash.client() as client:
        (feature,) = [f for f in client.get("/api/overview").json()["features"] if f["id"] == KEY]
    design = feature["gates"]["design"]
    assert design["last_approval"] == {
        "seq": approval["seq"],
        "actor": "human",
        "time": approval["time"],
    }
    assert design["drifted"] == [f".consort/features/{KEY}/test-list.json"]
    since = {c["artifact"]: c["since_approval"] for c in design["covers"]}
    assert {k: v["change"] for k, v in since.items()} == {
        "feature-spec": "unchanged",
        "architecture": "unchanged",
        "db-design": "unchanged",
        "test-list": "changed",
        "ux": "unchanged",
    }
    diff = since["test-list"]["diff"]
    assert diff[0] == f"--- .consort/features/{KEY}/test-list.json (approved)"
    assert f'-      "title": "{old_title}"' in diff  # the last key: no comma
    assert '+      "title": "a title the approval never saw"' in diff
    assert all(not v["diff"] for k, v in since.items() if k != "test-list")


def test_a_page_approval_is_recorded_as_one_at_the_terminal(tmp_path):
    from tests.integration.test_design_lane import approve_at_terminal

    root = tmp_path / "shop"
    try:
        ok(consort("init", str(root), cwd=tmp_path))
        write_config(root, {"default": "replay", "dir": str(RECORDING)})
        assert intake(root, "Stock visibility") == KEY
        ok(consort("drive", cwd=root))
        code, shown = approve_at_terminal(root, KEY, note="seen")
        assert code == 0, shown
        # a person edits a covered artifact: the gate must be approved again, now on the page
        path = root / ".consort" / "features" / KEY / "test-list.json"
        data = json.loads(path.read_text())
        data["items"][0]["title"] = "edited after the first approval"
        path.write_text(json.dumps(data, indent=2))
        with running_dashboard(root, terminal=True) as dash:
            body = {"gate": "design", "subject": KEY, "note": "seen"}
            answer = dash.decide("approve", body, token=dash.token)
            assert answer.status_code == 200, answer.text
        lines = ledger_lines(root)
        terminal, page = [e for e in lines if e["type"] == "gate.approved"]
        between = lines[terminal["seq"] : page["seq"] - 1]
        verdict = json.loads(consort("verify", "--json", cwd=root).stdout)
    finally:
        destroy_project_cluster(root)

    def without_time(event: dict) -> dict:
        return {k: v for k, v in event.items() if k not in ("seq", "time", "prev")}

    # the same record but for the one hash the edit changed
    changed = {
        kind
        for kind, digest in terminal["data"]["hashes"].items()
        if page["data"]["hashes"][kind] != digest
    }
    assert changed == {"test-list"}
    same = {**page, "data": {**page["data"], "hashes": terminal["data"]["hashes"]}}
    assert without_time(same) == without_time(terminal)
    assert terminal["actor"] == "human"
    # the edit was recorded as the person's before the approval, as the terminal records it
    (edit,) = [e for e in between if e["type"] == "artifact.accepted"]
    assert edit["actor"] == "human" and edit["data"]["source"] == "hand-edit"
    assert edit["data"]["hash"] == page["data"]["hashes"]["test-list"]
    assert verdict["ok"] is True, verdict
