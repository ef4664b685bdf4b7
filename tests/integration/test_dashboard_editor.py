"""`consort dashboard --editor`, as the VS Code extension starts it: over pipes, the URL and the
token arrive on one JSON line of its standard output; a decision with that token from the
dashboard's own origin is a person's; the editor's own origin is refused like any other; and the
dashboard stops when the editor closes its standard input."""

from __future__ import annotations

import json

import pytest

from tests.dashboard_process import editor_dashboard
from tests.integration.test_dashboard import at_design_gate, ledger_lines  # noqa: F401
from tests.integration.test_design_lane import KEY

pytestmark = pytest.mark.integration

DESIGN = {"gate": "design", "subject": KEY, "note": "approved in the editor"}
WEBVIEW_ORIGIN = "vscode-webview://1fjd9qa7m1hnb8ts7kkbu2lu6e0v2v5ugb1l5s8kfdn1i3p0p4s6"


def test_the_editor_reads_url_and_token_from_one_json_line(at_design_gate):  # noqa: F811
    with editor_dashboard(at_design_gate) as dash:
        announced = json.loads(dash.output[0])
        assert set(announced) == {"consort_dashboard", "url", "token", "read_only_reason"}
        assert announced["consort_dashboard"] == 1
        assert announced["read_only_reason"] is None
        assert dash.token and len(dash.token) >= 32
        with dash.client() as client:
            view = client.get("/api/overview").json()
        assert view["decisions_allowed"] is True and view["read_only_reason"] is None


def test_the_editors_own_origin_is_refused_like_any_other(at_design_gate):  # noqa: F811
    # a webview has an origin of its own; the extension sends the page's requests itself, as
    # the dashboard's page, so the dashboard never needs to accept that origin
    with editor_dashboard(at_design_gate) as dash:
        refused = dash.decide("approve", DESIGN, token=dash.token, origin=WEBVIEW_ORIGIN)
        assert refused.status_code == 403 and refused.json()["refused"] == "ORIGIN"
    assert not [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]


def test_closing_its_input_stops_it(at_design_gate):  # noqa: F811
    with editor_dashboard(at_design_gate) as dash:
        assert dash.process.stdin is not None
        dash.process.stdin.close()
        assert dash.process.wait(timeout=120) == 0


def test_an_approval_from_the_editor_is_a_persons(at_design_gate):  # noqa: F811
    with editor_dashboard(at_design_gate) as dash:
        approved = dash.decide("approve", DESIGN, token=dash.token)
        assert approved.status_code == 200, approved.text
        assert dash.token not in approved.text
    (decision,) = [e for e in ledger_lines(at_design_gate) if e["type"] == "gate.approved"]
    assert decision["actor"] == "human" and decision["subject"] == KEY
    assert decision["data"]["note"] == "approved in the editor"
