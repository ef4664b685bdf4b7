"""A page, a rebound DNS name or a local program that reads the dashboard for what it must not
give: a database login (a branch's, the root's, the superuser's) in a view or in the live feed,
a file outside the page's own through a path that climbs out, a CORS answer that would let
another origin read or decide, or a decision through a method other than POST.

The project waits at its design gate with a branch and a branch made from it, so every view has
something to show: features, turns, branches with their databases and schema diffs."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from consort.adapters.db.cluster import SUPERUSER
from consort.adapters.db.secret import load_secret, password_for
from tests.dashboard_process import Dashboard, running_dashboard
from tests.helpers import consort, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_dashboard import ledger_lines
from tests.integration.test_design_lane import KEY, RECORDING, intake, write_config

pytestmark = pytest.mark.integration

BRANCHES = ("main", "feature/x", "feature/x-child")
DESIGN = {"gate": "design", "subject": KEY, "note": "not through this door"}


@pytest.fixture(scope="module")
def branched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("dash-reach") / "shop"
    try:
        ok(consort("init", str(root), cwd=root.parent))
        write_config(root, {"default": "replay", "dir": str(RECORDING)})
        assert intake(root, "Stock visibility") == KEY
        ok(consort("drive", cwd=root))
        ok(consort("branch", "create", "feature/x", cwd=root))
        ok(consort("branch", "create", "feature/x-child", "--from", "feature/x", cwd=root))
        yield root
    finally:
        destroy_project_cluster(root)


def secrets_of(root: Path) -> dict[str, str]:
    """Every password the dashboard must never show: each branch role's and the superuser's."""
    found = {}
    for branch in BRANCHES:
        password = urlsplit(ok(consort("db", "url", branch, cwd=root)).strip()).password
        assert password
        found[branch] = password
    found[SUPERUSER] = password_for(load_secret(root / ".consort" / "db"), SUPERUSER)
    return found


def raw(dash: Dashboard, method: str, target: str, headers: dict[str, str]) -> tuple[int, str]:
    """One request with its target sent exactly as written (no client normalises `..` away)."""
    conn = http.client.HTTPConnection("127.0.0.1", dash.port, timeout=120)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def feed_until(dash: Dashboard, last_seq: int) -> str:
    """The live feed's raw text from the ledger's first event through `last_seq`."""
    seen = b""
    with socket.create_connection(("127.0.0.1", dash.port), timeout=120) as sock:
        sock.sendall(
            f"GET /api/events?since=0 HTTP/1.1\r\nHost: 127.0.0.1:{dash.port}\r\n\r\n".encode()
        )
        while f"id: {last_seq}\n".encode() not in seen:
            chunk = sock.recv(65536)
            assert chunk, "the feed ended before the ledger's last event"
            seen += chunk
    return seen.decode("utf-8", "replace")


def test_no_view_and_no_event_holds_a_database_password(branched):
    secrets = secrets_of(branched)
    last_seq = ledger_lines(branched)[-1]["seq"]
    with running_dashboard(branched, terminal=True) as dash, dash.client() as client:
        answers = [client.get(path).text for path in ("/", "/api/overview", "/api/verify")]
        overview = json.loads(answers[1])
        shown = {b["name"] for b in overview["status"]["branches"]}
        assert shown == set(BRANCHES)  # the branches are there, with their databases...
        for branch in BRANCHES:
            diff = client.get("/api/branch-diff", params={"name": branch})
            answers.append(diff.text)
        assert json.loads(answers[-1])["base"] == "feature/x"  # the child against its parent
        answers.append(client.get("/api/cycle", params={"subject": f"{KEY}/S1/T1"}).text)
        answers.append(feed_until(dash, last_seq))
        printed = dash.text()
    everything = "\n".join(answers)
    assert "postgresql://" not in everything  # ...and no login URL of any
    for who, secret in secrets.items():
        assert secret not in everything, f"{who}'s password reached the page"
        assert secret not in printed, f"{who}'s password is in the dashboard's output"


CLIMBS = (
    "/static/../guard.py",
    "/static/..%2fguard.py",
    "/static/%2e%2e/guard.py",
    "/static/%2e%2e%2fguard.py",
    "/static/....//guard.py",
    "/static/..\\guard.py",
    "/static//etc/passwd",
    "/static/%2fetc%2fpasswd",
    "/static/../../../../../../etc/passwd",
    "/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/static/app.js/../../guard.py",
    "/../../../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
)


def test_no_path_climbs_out_of_the_pages_own_files(branched):
    with running_dashboard(branched, terminal=False) as dash:
        status, body = raw(dash, "GET", "/static/app.js", {"Host": f"127.0.0.1:{dash.port}"})
        assert status == 200 and "textContent" in body  # the page's own file is served
        for target in CLIMBS:
            status, body = raw(dash, "GET", target, {"Host": f"127.0.0.1:{dash.port}"})
            assert status in (400, 404), (target, status)
            assert "compare_digest" not in body and "root:x:0:0" not in body, target


@pytest.mark.parametrize(
    ("view", "name"),
    [
        ("cycle", "subject"),
        ("branch-diff", "name"),
    ],
)
def test_a_lookup_by_name_reads_no_path(branched, view, name):
    asked = (
        "../../../../etc/passwd",
        "/etc/passwd",
        f"{KEY}/../../../etc/passwd",
        f"{KEY}/S1/../../../../etc/passwd",
        ".consort/db/secret",
        "../.consort/db/secret",
        f"{KEY}/S1/T1/../../..",
    )
    secret = password_for(load_secret(branched / ".consort" / "db"), SUPERUSER)
    with running_dashboard(branched, terminal=False) as dash, dash.client() as client:
        for value in asked:
            answer = client.get(f"/api/{view}", params={name: value})
            assert answer.status_code == 400, (value, answer.text)
            assert "root:x:0:0" not in answer.text and secret not in answer.text
            assert "postgresql://" not in answer.text


def test_near_miss_hosts_read_nothing_and_decide_nothing(branched):
    with running_dashboard(branched, terminal=True) as dash:
        port = dash.port
        hosts = (
            f"127.0.0.1:{port}.attacker.example",
            f"attacker.example:{port}",
            f"localhost.attacker.example:{port}",
            f"127.0.0.1.nip.io:{port}",
            "127.0.0.1",  # no port: a page on port 80 of a rebound name
            "localhost",
            f"127.0.0.1:{port + 1 if port < 65535 else port - 1}",
            f"[::1]:{port}",
            f"0.0.0.0:{port}",
            f"127.1:{port}",
            f"2130706433:{port}",  # 127.0.0.1 as one number
            f"LOCALHOST:{port}.",
            f"127.0.0.1:{port}@attacker.example",
            "",
        )
        for host in hosts:
            headers = {"Host": host} if host else {}
            status, body = raw(dash, "GET", "/api/overview", headers)
            assert status in (400, 403), (host, status)
            assert KEY not in body
            attempt = dash.decide(
                "approve", DESIGN, token=dash.token, host=host or None, origin=f"http://{host}"
            )
            assert attempt.status_code in (400, 403), (host, attempt.status_code)
    assert not [e for e in ledger_lines(branched) if e["type"].startswith("gate.")]


def test_no_cors_answer_lets_another_origin_read_or_decide(branched):
    evil = "http://attacker.example"
    with running_dashboard(branched, terminal=True) as dash, dash.client() as client:
        for path in ("/api/approve", "/api/reject", "/api/overview", "/api/events"):
            preflight = client.options(
                path,
                headers={
                    "origin": evil,
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "content-type, x-consort-token",
                },
            )
            allowing = [h for h in preflight.headers if h.startswith("access-control-")]
            assert allowing == [], (path, allowing)
        read = client.get("/api/overview", headers={"origin": evil})
        assert read.status_code == 200  # a read is answered, but the browser keeps it from evil
        assert not [h for h in read.headers if h.startswith("access-control-")]


def test_only_a_post_decides(branched):
    with running_dashboard(branched, terminal=True) as dash, dash.client() as client:
        headers = {
            "origin": dash.origin,
            "content-type": "application/json",
            "x-consort-token": dash.token or "",
        }
        body = json.dumps(DESIGN)
        for method in ("GET", "PUT", "PATCH", "DELETE"):
            for action in ("approve", "reject"):
                answer = client.request(method, f"/api/{action}", content=body, headers=headers)
                assert answer.status_code == 405, (method, action, answer.status_code)
        for method in ("GET", "PUT", "DELETE"):
            answer = client.request(
                method, f"/api/approve?gate=design&subject={KEY}", headers=headers
            )
            assert answer.status_code == 405
    assert not [e for e in ledger_lines(branched) if e["type"].startswith("gate.")]
