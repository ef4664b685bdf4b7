"""StockFlow's first feature built through the real agent CLIs.

The design lane is replayed as in the demo; every navigator and driver turn of the build lane
(RED, GREEN, the repair after a failing GREEN, review and refactor) is a real Claude Code process,
and in the second run every driver turn is a real Codex process, each talking to a scripted model
that replays the recorded playbook as tool calls. Consort runs the tests itself, as always: the
playbook only says what an honest pair of agents did.

The real CLIs build the feature's first two stories, which hold every step of the build lane
(S1's T2 fails its GREEN and is repaired; S2's T6 is reviewed into a refactor). Here a person
decides the gates (mode "interactive" instead of the demo's proxy): the test approves the design
and S1 at a terminal, and the build stops at S2's gate. S3's two cycles would only repeat RED,
GREEN and review, which the replayed demo builds.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from consort.adapters.agents.replay import recorded_files
from consort.app.demo import example_dir
from tests.e2e.playbook_model import PlaybookModel
from tests.e2e.real_agents import AGENTS, CODEX_KEY_VARIABLE, DUMMY_KEY, cli, codex_home
from tests.e2e.scripted_model import ScriptedModel
from tests.helpers import consort, git, ok
from tests.integration.conftest import destroy_project_cluster
from tests.integration.test_design_lane import approve_at_terminal

# The whole build lane, dozens of real agent turns: generous, never a timed assertion. Each
# fixture's setup takes minutes: started first on pytest-xdist workers (costly).
pytestmark = [pytest.mark.integration, pytest.mark.costly, pytest.mark.timeout(3600)]

PLAYBOOK = example_dir() / "playbook"
FEATURE = "F1-stock-visibility"
# The stories the real CLIs build, in order; the build stops at the last one's gate.
STORIES = ("S1-file-stock", "S2-stock-by-location")


@dataclass
class Built:
    root: Path
    output: str
    code: int
    model: PlaybookModel
    sessions: int
    stopped_at: dict[str, object]  # `consort next --json` once the last drive stopped


def agent_table(role: str, adapter: str, program: Path, url: str) -> str:
    constants = {"ANTHROPIC_BASE_URL": url, CODEX_KEY_VARIABLE: DUMMY_KEY}
    env = ", ".join(f"{name} = {json.dumps(value)}" for name, value in constants.items())
    return (
        f"\n[agents.{role}]\n"
        f'adapter = "{adapter}"\n'
        f"command = [{json.dumps(str(program))}]\n"
        'env_allow = ["ANTHROPIC_API_KEY"]\n'
        f"env = {{ {env} }}\n"
        # The sandbox shows the command's own file; npm's bin link points into the package
        # folder (Codex's launcher also starts a native binary from there), shown read-only.
        f"read_only = [{json.dumps(str(AGENTS / 'node_modules'))}]\n"
        "inactivity_timeout = 600\n"
        "retries = 0\n"
    )


def build(tmp: Path, adapters: dict[str, str]) -> Built:
    outside_tmp = Path(tempfile.mkdtemp(prefix="consort-e2e-", dir="/var/tmp"))
    try:
        return _build(tmp, outside_tmp, adapters)
    finally:
        shutil.rmtree(outside_tmp, ignore_errors=True)


def _build(tmp: Path, outside_tmp: Path, adapters: dict[str, str]) -> Built:
    root = tmp / "stockflow"
    ok(consort("demo", str(root), "--setup-only", cwd=tmp, timeout=900))
    playbook = PlaybookModel(PLAYBOOK)
    model = ScriptedModel(playbook).start()
    try:
        config = root / "consort.toml"
        tables = "".join(
            agent_table(role, adapter, cli(adapter), model.url)
            for role, adapter in adapters.items()
        )
        config.write_text(interactive_gates(config.read_text()) + tables)
        git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "real agents")
        (tmp / "tmp").mkdir()
        environment = {
            "ANTHROPIC_API_KEY": DUMMY_KEY,
            "CLAUDE_CONFIG_DIR": str(tmp / "claude-config"),
            # Codex keeps no helper links (its apply_patch among them) in a CODEX_HOME under the
            # temporary folder, and in the sandbox that is /tmp: the home lies elsewhere.
            "CODEX_HOME": str(codex_home(outside_tmp / "codex-home", model.url)),
            "TMPDIR": str(tmp / "tmp"),
        }
        code, output, stopped_at = drive_to_last_gate(root, environment)
    finally:
        model.stop()
    return Built(root, output, code, playbook, len(model.sessions()), stopped_at)


def interactive_gates(config: str) -> str:
    """The demo's consort.toml with its gates decided by a person instead of the proxy."""
    changed, count = re.subn(
        r'^mode = "proxy".*$', 'mode = "interactive"', config, count=1, flags=re.MULTILINE
    )
    assert count == 1, config
    return changed


def drive_to_last_gate(
    root: Path, environment: dict[str, str]
) -> tuple[int, str, dict[str, object]]:
    """Drive the build lane, approving each gate as a person does, at a terminal (the design,
    then each story of STORIES but the last), until the drive waits at the last story's gate;
    the last drive's exit code, every drive's output, and where the project stands then."""
    output = ""
    for _ in range(len(STORIES) + 2):
        result = consort("drive", "--until", "build", cwd=root, env=environment, timeout=3600)
        output += result.stdout + result.stderr
        stopped_at: dict[str, object] = json.loads(ok(consort("next", "--json", cwd=root)))
        if result.returncode != 0 or stopped_at["kind"] != "await-gate":
            break
        if at_the_last_gate(stopped_at):
            break
        command = str(stopped_at["command"]).split()
        assert command[:2] == ["consort", "approve"] and len(command) == 4, stopped_at
        code, said = approve_at_terminal(root, command[3], gate=command[2])
        assert code == 0, said
    return result.returncode, output, stopped_at


def turn_records(root: Path) -> dict[str, dict[str, object]]:
    found = {}
    for record in sorted((root / ".consort" / "turns").glob("*/agent.json")):
        found[record.parent.name] = json.loads(record.read_text())
    return found


@pytest.fixture(scope="module")
def with_claude(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    cli("claude")
    tmp = tmp_path_factory.mktemp("claude-build")
    built = build(tmp, {"navigator": "claude", "driver": "claude"})
    yield built
    destroy_project_cluster(built.root)


@pytest.fixture(scope="module")
def with_codex(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    cli("claude")
    cli("codex")
    tmp = tmp_path_factory.mktemp("codex-build")
    built = build(tmp, {"navigator": "claude", "driver": "codex"})
    yield built
    destroy_project_cluster(built.root)


def build_keys() -> list[str]:
    """Every recorded build turn of STORIES."""
    return sorted(
        str(path.relative_to(PLAYBOOK))
        for story in STORIES
        for path in PLAYBOOK.glob(f"{FEATURE}/{story}/T*/*/*")
        if path.is_dir()
    )


def at_the_last_gate(action: dict[str, object]) -> bool:
    """`consort next --json` waits for a person to accept the last of STORIES."""
    return (
        action["kind"] == "await-gate"
        and str(action["command"]).startswith("consort approve story ")
        and f"every cycle of {STORIES[-1]} is done" in str(action["reason"])
    )


def stopped_at_the_last_gate(built: Built) -> None:
    """The build ended waiting for a person at the last story's gate, not for another reason."""
    assert at_the_last_gate(built.stopped_at), built.stopped_at


def test_the_whole_build_lane_runs_through_the_real_claude_code(with_claude: Built) -> None:
    assert with_claude.code == 0, with_claude.output
    stopped_at_the_last_gate(with_claude)
    assert with_claude.model.missing == []
    # Every recorded build turn, the failed GREEN and its repair included, was a Claude turn.
    assert sorted(with_claude.model.served) == build_keys()
    records = turn_records(with_claude.root)
    assert len(records) == len(build_keys()) == with_claude.sessions
    for name, record in records.items():
        assert record["adapter"] == "claude", name
        assert record["status"] == "ok", (name, record["message"])
        assert record["refused"] == [], name
        assert str(record["cli_version"]).startswith("2.1."), name
    steps = {name.split("-", 2)[2] for name in records}
    assert steps == {"red", "green", "repair", "review", "refactor"}
    ok(consort("verify", cwd=with_claude.root))


def test_the_refactor_commit_holds_what_claude_wrote(with_claude: Built) -> None:
    cycle = with_claude.root / ".consort" / "cycles" / FEATURE / "S2-stock-by-location" / "T6"
    refactor = json.loads((cycle / "cycle.json").read_text())["stages"]["refactor"]
    assert refactor["unchanged"] is False
    recorded = PLAYBOOK / FEATURE / "S2-stock-by-location" / "T6" / "refactor" / "1" / "files"
    for path in sorted(recorded_files(recorded)):
        relative = path.relative_to(recorded).as_posix()
        committed = git(with_claude.root, "show", f"{refactor['commit']}:{relative}")
        assert committed == path.read_text().strip(), relative
    turn = with_claude.root / ".consort" / "turns" / refactor["turn"]
    edits = json.loads((turn / "agent.json").read_text())["edits"]
    assert {(e["tool"], e["status"]) for e in edits} == {("Write", "done")}


def test_every_green_runs_through_the_real_codex(with_codex: Built) -> None:
    assert with_codex.code == 0, with_codex.output
    stopped_at_the_last_gate(with_codex)
    assert with_codex.model.missing == []
    assert sorted(with_codex.model.served) == build_keys()
    records = turn_records(with_codex.root)
    drivers = {n: r for n, r in records.items() if "-driver-" in n}
    assert drivers and all(r["adapter"] == "codex" for r in drivers.values())
    for name, record in drivers.items():
        assert record["status"] == "ok", (name, record["message"])
        assert "PreToolUse hook" in str(record["guard"]), name
        assert record["refused"] == [], name
    assert all(r["adapter"] == "claude" for n, r in records.items() if "-navigator-" in n)
    ok(consort("verify", cwd=with_codex.root))
