"""The design lane end to end: real `consort` processes, real git, real agent processes.

A lane runs with the `replay` adapter (tests/fixtures/replay/) and with a `command` agent written
here (`AGENT_SOURCE`) that writes the StockFlow artifacts of tests/fixtures/artifacts/ — or
misbehaves in the way its plan says, to check that every kind of bad input ends in a clear
message, a valid ledger, and a lane that resumes once the cause is fixed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from consort.core.artifacts.canonical import artifact_hash
from consort.core.ledger import Event, EventType, Ledger, ledger_path
from tests.helpers import at_terminal, consort, processes_naming
from tests.integration.conftest import destroy_project_cluster

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ARTIFACTS = FIXTURES / "artifacts"
RECORDING = FIXTURES / "replay"
KEY = "F1-stock-visibility"
DESIGN = ("feature-spec", "architecture", "db-design", "test-list", "ux")
BACKEND = DESIGN[:4]  # a feature that is not user-facing has no UX design
STEPS = ("spec", "architecture", "db-design", "test-list", "ux")
INACTIVITY_S = 60  # the shared project's agent inactivity limit
REQUEST = """\
Stock visibility

Our warehouse staff count stock by hand. I want them to file a count for a SKU at a location,
see everything held at one location, and open a SKU to see where it is stocked.
"""

AGENT_SOURCE = r'''
"""A role agent speaking Consort's protocol: it copies the StockFlow artifact its turn asks for,
unless the plan in its control folder tells it to misbehave on this call."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

fixtures, control = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
task = json.loads(pathlib.Path(os.environ["CONSORT_TASK"]).read_text(encoding="utf-8"))
slug = task["feature"].split("-", 1)[1]
where = f"{slug}--{task['step']}"
plan_file = control / "plan.json"
plan = json.loads(plan_file.read_text()) if plan_file.exists() else {}
counter = control / "counts" / where
counter.parent.mkdir(parents=True, exist_ok=True)
call = (int(counter.read_text()) if counter.exists() else 0) + 1
counter.write_text(str(call))
seen = control / "seen" / f"{where}--{call}.json"
seen.parent.mkdir(parents=True, exist_ok=True)
seen.write_text(
    json.dumps({"task": task, "env": dict(os.environ), "cwd": os.getcwd(), "pid": os.getpid()})
)
behaviours = plan.get(where, [])
behaviour = behaviours[call - 1] if call <= len(behaviours) else "good"
((name, out),) = task["outputs"].items()
out = pathlib.Path(out)


def good():
    print(f"writing {name} for {task['feature']}", flush=True)
    shutil.copyfile(fixtures / f"{name}.json", out)


def consort(*args):
    done = subprocess.run(
        [sys.executable, "-m", "consort", *args], capture_output=True, text=True, timeout=60
    )
    return {"args": list(args), "code": done.returncode, "stderr": done.stderr}


if behaviour == "good":
    good()
elif behaviour.startswith("sleep:"):
    time.sleep(float(behaviour.split(":", 1)[1]))
    good()
elif behaviour == "wait-for-go":
    (control / f"waiting--{where}").touch()
    deadline = time.monotonic() + 60
    while not (control / f"go--{where}").exists():
        if time.monotonic() > deadline:
            sys.exit("nobody said go")
        print("still thinking", flush=True)  # output keeps the inactivity timeout away
        time.sleep(0.1)
    good()
elif behaviour == "invalid-json":
    out.write_text('{"feature": "F1", "layers": [,]}')
elif behaviour == "nothing":
    print("done, honestly")
elif behaviour == "exit-3":
    print("cannot reach the model", file=sys.stderr)
    sys.exit(3)
elif behaviour == "loop":
    while True:  # silent for ever: only the inactivity timeout ends it
        time.sleep(0.05)
elif behaviour == "outside":
    good()
    refused = {}

    def attempt(what, write):
        try:
            write()
        except OSError as exc:  # the sandbox refuses: recorded, and the agent goes on
            refused[what] = exc.strerror

    def sneak():
        pathlib.Path("src").mkdir(exist_ok=True)
        pathlib.Path("src/sneaky.py").write_text("GRANT_ALL = True\n")

    def ignore():
        with open(".gitignore", "a") as handle:
            handle.write("# the agent was here\n")

    def rewrite():
        spec = pathlib.Path(".consort/features", task["feature"], "feature-spec.json")
        spec.write_text('{"rewritten": "by an agent"}')

    def forge():
        with open(".consort/ledger.jsonl", "a") as handle:
            handle.write('{"type": "gate.approved", "actor": "human"}\n')

    for what, write in (
        ("src/sneaky.py", sneak),
        (".gitignore", ignore),
        ("feature-spec", rewrite),
        ("ledger", forge),
    ):
        attempt(what, write)
    (control / "outside.json").write_text(json.dumps(refused))
elif behaviour == "as-owner":
    tries = [
        consort("approve", "design", task["feature"]),
        consort("reject", "design", task["feature"], "--note", "the spec is wrong"),
        consort("drive"),
    ]
    (control / "as-owner.json").write_text(json.dumps(tries))
    good()
elif behaviour in ("kill-before", "kill-after"):
    # A sandboxed agent cannot signal the drive that runs it (it cannot even see it): it asks
    # the test to SIGKILL the drive, then waits to be ended with it.
    if behaviour == "kill-after":
        good()
    (control / "kill-drive").write_text(where)
    time.sleep(60)
    sys.exit("the drive was not killed")
else:
    sys.exit(f"unknown behaviour {behaviour}")
'''


# ---- helpers ------------------------------------------------------------------------------------


def flat(text: str) -> str:
    """Terminal output with its line wrapping undone."""
    return " ".join(text.split())


def run(
    root: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return consort(*args, cwd=root, env=env, timeout=120)


def expect(result: subprocess.CompletedProcess[str], code: int) -> str:
    """Both streams, flattened, after checking the exit code."""
    both = flat(result.stdout + "\n" + result.stderr)
    assert result.returncode == code, f"exit {result.returncode}, expected {code}: {both}"
    return both


def events(root: Path) -> list[Event]:
    """Every ledger event; reading through a fresh Ledger verifies the whole chain."""
    return Ledger(ledger_path(root / ".consort")).read()


def of_type(root: Path, kind: EventType, subject: str | None = None) -> list[Event]:
    return [e for e in events(root) if e.type is kind and subject in (None, e.subject)]


def verified(root: Path) -> str:
    return expect(run(root, "verify"), 0)


def feature_dir(root: Path, key: str) -> Path:
    return root / ".consort" / "features" / key


def fixture_hashes(kinds: Sequence[str]) -> dict[str, str]:
    return {kind: artifact_hash(ARTIFACTS / f"{kind}.json") for kind in kinds}


def accepted_hashes(root: Path, key: str) -> dict[str, str]:
    """The last accepted hash of each artifact, checked against the file in the feature folder."""
    accepted: dict[str, str] = {}
    for event in of_type(root, EventType.ARTIFACT_ACCEPTED, key):
        accepted[str(event.data["kind"])] = str(event.data["hash"])
    for kind, digest in accepted.items():
        assert artifact_hash(feature_dir(root, key) / f"{kind}.json") == digest, kind
    return accepted


def turn_folders(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".consort" / "turns").iterdir() if p.is_dir())


def turn_steps(root: Path, key: str) -> list[str]:
    return [str(e.data["step"]) for e in of_type(root, EventType.TURN_STARTED, key)]


def write_config(
    root: Path,
    agents: Mapping[str, Any],
    *,
    gates: str = "interactive",
    retries: int = 2,
) -> None:
    """consort.toml with these [agents] settings (JSON strings and lists are valid TOML)."""
    lines = ["[gates]", f'mode = "{gates}"', "", "[turns]", f"retries = {retries}", "", "[agents]"]
    lines += [f"{name} = {json.dumps(value)}" for name, value in agents.items()]
    (root / "consort.toml").write_text("\n".join(lines) + "\n")


def intake(root: Path, title: str, *, user_facing: bool = True) -> str:
    """Record a feature request; return the feature's key."""
    request = root.parent / f"request-{time.monotonic_ns()}.md"
    request.write_text(REQUEST)
    flags = ["--user-facing"] if user_facing else []
    expect(run(root, "intake", "feature", "--file", str(request), "--title", title, *flags), 0)
    return of_type(root, EventType.FEATURE_CREATED)[-1].subject


def short(key: str) -> str:
    return key.split("-", 1)[0]


class Agent:
    """The command agent of `AGENT_SOURCE`, its plan, and what it saw on each call."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.script = folder / "agent.py"
        self.script.write_text(AGENT_SOURCE)
        self.control = folder / "control"
        self.control.mkdir(exist_ok=True)
        self._plan: dict[str, list[str]] = {}

    @property
    def command(self) -> list[str]:
        return [sys.executable, str(self.script), str(ARTIFACTS), str(self.control)]

    def plan(self, key: str, step: str, *behaviours: str) -> None:
        self._plan[f"{key.split('-', 1)[1]}--{step}"] = list(behaviours)
        (self.control / "plan.json").write_text(json.dumps(self._plan))

    def seen(self, key: str, step: str, call: int) -> dict[str, Any]:
        where = f"{key.split('-', 1)[1]}--{step}--{call}"
        data: dict[str, Any] = json.loads((self.control / "seen" / f"{where}.json").read_text())
        return data

    def calls(self, key: str, step: str) -> int:
        counter = self.control / "counts" / f"{key.split('-', 1)[1]}--{step}"
        return int(counter.read_text()) if counter.exists() else 0

    def wait_until_waiting(self, key: str, step: str, within_s: float = 30) -> None:
        flag = self.control / f"waiting--{key.split('-', 1)[1]}--{step}"
        deadline = time.monotonic() + within_s
        while not flag.exists():
            assert time.monotonic() < deadline, f"the agent never reached {step}"
            time.sleep(0.02)

    def go(self, key: str, step: str) -> None:
        (self.control / f"go--{key.split('-', 1)[1]}--{step}").touch()

    @property
    def settings(self) -> dict[str, Any]:
        """[agents] settings that run this agent: its control folder is its writable state."""
        return {"default": "command", "command": self.command, "state": [str(self.control)]}

    def processes(self) -> list[int]:
        """Host PIDs of every process still running this agent (or its sandbox), found by the
        control folder in their command line: inside a sandbox an agent knows only the PIDs of
        its own namespace."""
        return processes_naming(str(self.control))

    def stop_leftovers(self) -> None:
        """SIGKILL every process of this agent still running."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def approve_at_terminal(
    root: Path, key: str, answer: str = "y", note: str | None = None, *, gate: str = "design"
) -> tuple[int, str]:
    """`consort approve GATE KEY` on a real pseudo-terminal, answering the confirmation."""
    args = ["approve", gate, key] + (["--note", note] if note else [])
    code, seen = at_terminal(root, *args, answer=answer)
    return code, flat(seen.decode("utf-8", "replace"))


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(tmp_path / "agent")


# ---- full lanes ---------------------------------------------------------------------------------


def test_replay_lane_gate_approval_and_drift(fresh_project: Path) -> None:
    root = fresh_project
    write_config(root, {"default": "replay", "dir": str(RECORDING)})
    assert intake(root, "Stock visibility") == KEY
    nxt = expect(run(root, "next"), 0)
    assert "run-turn" in nxt and "spec-author/spec" in nxt

    out = expect(run(root, "drive"), 0)
    assert f"consort approve design {KEY}" in out
    assert turn_steps(root, KEY) == list(STEPS)
    assert not of_type(root, EventType.TURN_FAILED)
    hashes = fixture_hashes(DESIGN)
    assert accepted_hashes(root, KEY) == hashes
    # Each role read the artifacts before its own, and only those.
    turns = sorted(p for p in (root / ".consort" / "turns").iterdir() if p.is_dir())
    db_task = json.loads((turns[2] / "task.json").read_text())
    assert set(db_task["inputs"]) >= {"schema", "feature-request", "feature-spec", "architecture"}
    assert not {"test-list", "ux"} & set(db_task["inputs"])
    assert db_task["outputs"] == {"db-design": str(turns[2] / "outputs" / "db-design.json")}
    status = json.loads(expect(run(root, "status", "--json"), 0))
    assert status["features"][0]["next"] == "await-gate"
    assert set(status["features"][0]["artifacts"].values()) == {"accepted"}
    assert "5 accepted artifacts match" in verified(root)

    # Driving again changes nothing: it stops at the same gate.
    before = len(events(root))
    assert f"consort approve design {KEY}" in expect(run(root, "drive"), 0)
    assert [e.type for e in events(root)[before:]] == [
        EventType.DRIVE_STARTED,
        EventType.DRIVE_STOPPED,
    ]

    # Approving needs a person at a terminal.
    refused = expect(run(root, "approve", "design", "F1"), 2)
    assert "terminal" in refused
    code, said = approve_at_terminal(root, "F1", answer="n")
    assert code == 2 and "not approved" in said
    assert 'consort reject design F1 --note "..."' in said  # what a "no" can do instead
    assert not of_type(root, EventType.GATE_APPROVED)

    code, said = approve_at_terminal(root, "F1", note="looks right")
    assert code == 0, said
    for digest in hashes.values():
        assert digest in said  # the person saw what they approve
    for kind in DESIGN:
        assert f".consort/features/{KEY}/{kind}.json" in said  # where, and in words:
    assert "T1 S1/AC1" in said and "table stock_records" in said and "AC1 given" in said
    assert "never approved before" in said
    (approval,) = of_type(root, EventType.GATE_APPROVED)
    assert approval.actor.value == "human"
    assert approval.data["hashes"] == hashes
    assert approval.data["note"] == "looks right"
    assert "design approval" in verified(root)
    assert "end of the design lane" in expect(run(root, "drive", "--until", "design"), 0)
    # The gate is decided: approving again or sending the design back is refused, saying so.
    again = expect(run(root, "approve", "design", "F1"), 2)
    assert f"the design gate of {KEY} is already approved (by the human" in again
    assert "fix:" in again
    back = expect(run(root, "reject", "design", "F1", "--note", "spec: no"), 2)
    assert "is already approved" in back
    assert len(of_type(root, EventType.GATE_APPROVED)) == 1
    assert not of_type(root, EventType.GATE_REJECTED)

    # A hand edit of an approved artifact re-opens the gate: drive and verify fail closed.
    path = feature_dir(root, KEY) / "architecture.json"
    original = path.read_bytes()
    data = json.loads(original)
    data["layers"][0]["description"] = "edited after the approval"
    path.write_text(json.dumps(data, indent=2))
    shown = f".consort/features/{KEY}/architecture.json"
    assert shown in expect(run(root, "drive"), 4)
    assert shown in expect(run(root, "verify"), 4)
    status = json.loads(expect(run(root, "status", "--json"), 0))
    assert status["features"][0]["design_gate"] == "approved (drifted)"
    assert status["features"][0]["next"] == "integrity-stop"

    # Re-indenting is not a change (canonical hashing); restoring the content closes it again.
    path.write_text(json.dumps(json.loads(original), indent=8))
    assert "design approval" in verified(root)


# ---- one project, one feature per test --------------------------------------------------------


class Shared:
    """A project driven by the command agent; each test works on a feature of its own, so the
    tests do not depend on one another (`drive --feature` keeps them apart)."""

    def __init__(self, root: Path, agent: Agent) -> None:
        self.root = root
        self.agent = agent
        self.config = (root / "consort.toml").read_text()

    @contextlib.contextmanager
    def configured(self, text: str) -> Iterator[None]:
        """consort.toml replaced by `text` for the block."""
        (self.root / "consort.toml").write_text(text)
        try:
            yield
        finally:
            (self.root / "consort.toml").write_text(self.config)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    base = tmp_path_factory.mktemp("shared")
    root = base / "app"
    expect(consort("init", str(root), cwd=base), 0)
    agent = Agent(base / "agent")
    # One retry keeps the failure paths fast. The inactivity limit is far above what an agent
    # needs between two lines of output, even one running `consort` itself on a loaded machine;
    # the one test about inactivity shortens it for itself.
    write_config(root, {**agent.settings, "inactivity_timeout": INACTIVITY_S}, retries=1)
    try:
        yield Shared(root, agent)
    finally:
        agent.stop_leftovers()
        destroy_project_cluster(root)


def test_command_agent_lane(shared: Shared, tmp_path: Path) -> None:
    root, agent = shared.root, shared.agent
    key = intake(root, "Command agent", user_facing=False)
    agent.plan(key, "test-list", "as-owner")
    secrets = {"DATABASE_URL": "postgresql://owner:pw@db/prod", "PGPASSWORD": "pw", "API_KEY": "k"}

    out = expect(run(root, "drive", "--feature", short(key), env=secrets), 0)
    assert f"consort approve design {key}" in out
    assert turn_steps(root, key) == list(STEPS[:4])  # no UX step: not user-facing
    assert accepted_hashes(root, key) == fixture_hashes(BACKEND)
    assert not (feature_dir(root, key) / "ux.json").exists()

    # The protocol: task.json, the variables, the working tree; nothing of Consort's secrets.
    first = agent.seen(key, "architecture", 1)
    task, env = first["task"], first["env"]
    assert first["cwd"] == str(root)
    assert (env["CONSORT_ROLE"], env["CONSORT_STEP"]) == ("architect", "architecture")
    assert Path(env["CONSORT_TASK"]).name == "task.json"
    assert not {"DATABASE_URL", "PGPASSWORD", "API_KEY"} & set(env)
    assert (task["version"], task["role"], task["step"], task["attempt"]) == (
        1,
        "architect",
        "architecture",
        1,
    )
    assert task["feature"] == key and task["feedback"] is None
    assert "architect" in task["instructions"].lower()
    turn = Path(env["CONSORT_TASK"]).parent
    assert "writing architecture" in (turn / "stdout").read_text()
    assert json.loads((turn / "result.json").read_text())["exit_code"] == 0

    # An agent cannot act as the product owner, even from inside its own turn.
    tries = json.loads((agent.control / "as-owner.json").read_text())
    assert [t["code"] for t in tries] == [2, 2, 2]
    assert all("agent turn cannot" in flat(t["stderr"]) for t in tries)
    assert not of_type(root, EventType.GATE_APPROVED, key)
    assert not of_type(root, EventType.GATE_REJECTED, key)
    verified(root)


def test_proxy_mode_passes_the_gate_by_policy(shared: Shared) -> None:
    root = shared.root
    key = intake(root, "Proxy approves")
    with shared.configured(shared.config.replace('mode = "interactive"', 'mode = "proxy"')):
        out = expect(run(root, "drive", "--feature", short(key), "--until", "design"), 0)
    assert "end of the design lane" in out
    (approval,) = of_type(root, EventType.GATE_APPROVED, key)
    assert approval.actor.value == "proxy"
    assert approval.data["gate"] == "design"
    assert approval.data["hashes"] == fixture_hashes(DESIGN)
    assert "proxy" in approval.data["note"]
    assert f"{key}: design approval" in verified(root)


def test_rejection_sends_the_named_artifact_and_later_ones_back(shared: Shared) -> None:
    root, agent = shared.root, shared.agent
    key = intake(root, "Rejected once")
    expect(run(root, "drive", "--feature", short(key)), 0)
    # The note names the architecture ("deluxe" does not name the UX design).
    note = "For a deluxe feel, the architecture must keep routes out of the service layer"
    said = expect(run(root, "reject", "design", short(key), "--note", note), 0)
    assert "architecture goes back" in said
    status = json.loads(expect(run(root, "status", "--json"), 0))
    (line,) = [f for f in status["features"] if f["id"] == key]
    assert line["artifacts"] == {
        "feature-spec": "accepted",
        "architecture": "needs-redo",
        "db-design": "needs-redo",
        "test-list": "needs-redo",
        "ux": "needs-redo",
    }

    out = expect(run(root, "drive", "--feature", short(key)), 0)
    assert f"consort approve design {key}" in out
    assert turn_steps(root, key) == [*STEPS, *STEPS[1:]]
    assert agent.calls(key, "spec") == 1  # the spec was not sent back
    redo = agent.seen(key, "architecture", 2)["task"]
    assert note in redo["feedback"]
    assert redo["inputs"]["previous"].endswith(f"{key}/architecture.json")
    later = agent.seen(key, "db-design", 2)["task"]
    assert "architecture is being revised" in later["feedback"] and note in later["feedback"]
    assert accepted_hashes(root, key) == fixture_hashes(DESIGN)
    verified(root)


# ---- bad input ----------------------------------------------------------------------------------


def failures(root: Path, key: str) -> list[Event]:
    return of_type(root, EventType.TURN_FAILED, key)


def test_invalid_json_retries_with_feedback_then_escalates(shared: Shared) -> None:
    root, agent = shared.root, shared.agent
    key = intake(root, "Invalid json", user_facing=False)
    agent.plan(key, "architecture", "invalid-json", "invalid-json")

    out = expect(run(root, "drive", "--feature", short(key)), 3)
    assert "consort retry" in out
    assert "an escalation waits for a person" in out and "consort: error" not in out
    assert [e.data["step"] for e in failures(root, key)] == ["architecture", "architecture"]
    first_errors = failures(root, key)[0].data["errors"]
    assert any("invalid JSON" in e for e in first_errors)
    second = agent.seen(key, "architecture", 2)["task"]
    assert second["attempt"] == 2
    assert "invalid JSON" in second["feedback"]  # the validation errors of attempt 1
    (raised,) = of_type(root, EventType.ESCALATION_RAISED, key)
    assert raised.data["step"] == "architecture"
    status = json.loads(expect(run(root, "status", "--json"), 0))
    (escalation,) = [e for e in status["escalations"] if e["feature"] == key]
    assert escalation["step"] == "architecture"
    assert escalation["command"].startswith(f"consort retry {short(key)}")
    assert "2 attempts" in expect(run(root, "drive", "--feature", short(key)), 3)
    verified(root)

    note = "Write strict JSON: no empty array slots"
    expect(run(root, "retry", short(key), "--note", note), 0)
    out = expect(run(root, "drive", "--feature", short(key)), 0)
    assert f"consort approve design {key}" in out
    third = agent.seen(key, "architecture", 3)["task"]
    assert note in third["feedback"]
    assert third["attempt"] == 1  # fresh attempts after the person's answer
    assert accepted_hashes(root, key) == fixture_hashes(BACKEND)
    verified(root)


def test_agent_writing_nothing_fails_the_attempt(shared: Shared) -> None:
    root, agent = shared.root, shared.agent
    key = intake(root, "Writes nothing", user_facing=False)
    agent.plan(key, "spec", "nothing")
    expect(run(root, "drive", "--feature", short(key)), 0)
    (failed,) = failures(root, key)
    assert any("no feature-spec written" in e for e in failed.data["errors"])
    assert "no feature-spec written" in agent.seen(key, "spec", 2)["task"]["feedback"]
    assert accepted_hashes(root, key) == fixture_hashes(BACKEND)
    verified(root)


def test_agent_writing_outside_its_scope_is_refused_by_the_sandbox(shared: Shared) -> None:
    """A design turn may write its output only: its tree (the main checkout) is read-only and
    Consort's state is not there at all, so every write fails at once and nothing needs undoing."""
    root, agent = shared.root, shared.agent
    key = intake(root, "Writes outside, sandboxed", user_facing=False)
    agent.plan(key, "db-design", "outside")
    gitignore = (root / ".gitignore").read_bytes()
    expect(run(root, "drive", "--feature", short(key)), 0)

    refused = json.loads((agent.control / "outside.json").read_text())
    assert set(refused) == {"src/sneaky.py", ".gitignore", "feature-spec", "ledger"}
    assert not (root / "src" / "sneaky.py").exists()
    assert (root / ".gitignore").read_bytes() == gitignore
    assert not of_type(root, EventType.VIOLATION_RECORDED, key)  # nothing changed to revert
    assert not of_type(root, EventType.GATE_APPROVED, key)
    assert accepted_hashes(root, key) == fixture_hashes(BACKEND)
    verified(root)


def test_agent_writing_outside_its_scope_is_reverted_when_unsandboxed(shared: Shared) -> None:
    """With `sandbox = "off"` the post-turn check is what stands: every change is reverted."""
    root, agent = shared.root, shared.agent
    key = intake(root, "Writes outside", user_facing=False)
    agent.plan(key, "db-design", "outside")
    gitignore = (root / ".gitignore").read_bytes()
    with shared.configured(shared.config.replace("[agents]\n", '[agents]\nsandbox = "off"\n')):
        expect(run(root, "drive", "--feature", short(key)), 0)

    assert json.loads((agent.control / "outside.json").read_text()) == {}  # nothing stopped it
    assert not (root / "src" / "sneaky.py").exists()
    assert (root / ".gitignore").read_bytes() == gitignore
    violations = of_type(root, EventType.VIOLATION_RECORDED, key)
    paths = {e.data["path"] for e in violations}
    assert paths == {
        "src/sneaky.py",
        ".gitignore",
        f".consort/features/{key}/feature-spec.json",
        ".consort/ledger.jsonl",  # the forged line is gone: the chain below still verifies
    }
    assert not of_type(root, EventType.GATE_APPROVED, key)
    assert {e.data["role"] for e in violations} == {"dba"}
    (failed,) = failures(root, key)
    assert failed.data["step"] == "db-design"
    assert any("src/sneaky.py" in e and "reverted" in e for e in failed.data["errors"])
    # The accepted spec the agent overwrote is back, so the lane went on on solid ground.
    assert accepted_hashes(root, key) == fixture_hashes(BACKEND)
    verified(root)
    # Every turn of that drive is on record as unsandboxed, and status and verify say so.
    ran = {e.data["sandbox"] for e in of_type(root, EventType.TURN_STARTED, key)}
    assert ran == {"off"}
    unsandboxed = json.loads(expect(run(root, "status", "--json"), 0))["unsandboxed_turns"]
    assert unsandboxed and all(line.startswith(f"{key}: ") for line in unsandboxed)
    said = expect(run(root, "verify"), 0)
    assert "ran without a sandbox" in said and key in said
    checked = json.loads(expect(run(root, "verify", "--json"), 0))
    assert any("ran without a sandbox" in w for w in checked["warnings"])


def test_agent_looping_for_ever_is_killed_for_inactivity(shared: Shared) -> None:
    root, agent = shared.root, shared.agent
    key = intake(root, "Loops for ever", user_facing=False)
    agent.plan(key, "spec", "loop")
    # Short enough to wait for, long enough for the retry (a good agent, writing at once).
    short_limit = f"inactivity_timeout = {INACTIVITY_S}", "inactivity_timeout = 3"
    started = time.monotonic()
    with shared.configured(shared.config.replace(*short_limit)):
        expect(run(root, "drive", "--feature", short(key)), 0)
    assert time.monotonic() - started < 30
    (failed,) = failures(root, key)
    assert any("inactivity" in e for e in failed.data["errors"])
    turn = root / ".consort" / "turns" / str(failed.data["turn"])
    assert json.loads((turn / "result.json").read_text())["killed_for_inactivity"] is True
    looping = agent.seen(key, "spec", 1)
    assert looping["task"]["attempt"] == 1
    assert accepted_hashes(root, key) == fixture_hashes(BACKEND)
    verified(root)


def test_agent_exiting_non_zero_fails_the_attempt(shared: Shared) -> None:
    root, agent = shared.root, shared.agent
    key = intake(root, "Exits badly", user_facing=False)
    agent.plan(key, "test-list", "exit-3")
    expect(run(root, "drive", "--feature", short(key)), 0)
    (failed,) = failures(root, key)
    assert failed.data["exit_code"] == 3
    assert any("exited 3" in e and "cannot reach the model" in e for e in failed.data["errors"])
    assert "cannot reach the model" in agent.seen(key, "test-list", 2)["task"]["feedback"]
    verified(root)


def test_corrupt_or_missing_artifact_stops_then_resumes(shared: Shared) -> None:
    root = shared.root
    key = intake(root, "Corrupted by hand", user_facing=False)
    expect(run(root, "drive", "--feature", short(key)), 0)
    path = feature_dir(root, key) / "db-design.json"
    good = path.read_bytes()

    path.write_text('{"feature": "F1", "tables": [')
    out = expect(run(root, "drive", "--feature", short(key)), 1)
    assert f".consort/features/{key}/db-design.json" in out
    assert "invalid JSON" in out
    verified(root)
    path.write_bytes(good)
    assert f"consort approve design {key}" in expect(run(root, "drive", "--feature", key), 0)

    # A deleted artifact comes back from the turn output the ledger accepted ...
    turns_before = len(of_type(root, EventType.TURN_STARTED, key))
    path.unlink()
    expect(run(root, "drive", "--feature", short(key)), 0)
    assert path.read_bytes() == good
    assert len(of_type(root, EventType.TURN_STARTED, key)) == turns_before
    verified(root)

    # ... but never from a turn output changed since: that is an integrity failure.
    (accepted,) = [
        e for e in of_type(root, EventType.ARTIFACT_ACCEPTED, key) if e.data["kind"] == "db-design"
    ]
    output = root / ".consort" / "turns" / str(accepted.data["turn"]) / "outputs"
    output = output / "db-design.json"
    evidence = output.read_bytes()
    output.write_text(json.dumps({**json.loads(evidence), "tables": []}))
    path.unlink()
    shown = f".consort/turns/{accepted.data['turn']}/outputs/db-design.json"
    assert shown in expect(run(root, "drive", "--feature", short(key)), 4)
    assert not path.exists()
    assert shown in expect(run(root, "verify"), 4)
    output.write_bytes(evidence)
    expect(run(root, "drive", "--feature", short(key)), 0)
    assert path.read_bytes() == good
    verified(root)


def test_malformed_configuration_is_named_and_drive_resumes(shared: Shared) -> None:
    root = shared.root
    key = intake(root, "Config trouble", user_facing=False)
    broken = {
        shared.config + "\n[turns\nretries = 1\n": "not valid TOML",
        shared.config.replace("retries = 1", "retries = -4"): "turns.retries",
        shared.config.replace('default = "command"', 'default = "telepathy"'): "telepathy",
        # A program that does not exist would fail every attempt: it is the configuration's.
        shared.config.replace(
            "command = [", 'command = ["no-such-agent-program-3f9a", '
        ): "agent program 'no-such-agent-program-3f9a' is not found",
    }
    before, folders = len(events(root)), turn_folders(root)
    for text, rule in broken.items():
        with shared.configured(text):
            out = expect(run(root, "drive", "--feature", short(key)), 2)
        assert "consort.toml" in out and rule in out
    # Found before any turn began: no turn is left half-recorded.
    assert not [e for e in events(root)[before:] if e.type is EventType.TURN_STARTED]
    assert turn_folders(root) == folders
    verified(root)
    assert f"consort approve design {key}" in expect(run(root, "drive", "--feature", key), 0)
    assert accepted_hashes(root, key) == fixture_hashes(BACKEND)
    verified(root)


# ---- one driver at a time, and never an agent ---------------------------------------------------


def test_second_drive_is_refused(shared: Shared, tmp_path: Path) -> None:
    root, agent = shared.root, shared.agent
    key = intake(root, "Slow agent", user_facing=False)
    agent.plan(key, "spec", "wait-for-go")
    started = len(of_type(root, EventType.DRIVE_STARTED))
    log = (tmp_path / "first.out").open("w")
    first = subprocess.Popen(
        [sys.executable, "-m", "consort", "drive", "--feature", short(key)],
        cwd=root,
        env=dict(os.environ, COLUMNS="200"),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        agent.wait_until_waiting(key, "spec")
        second = expect(run(root, "drive", "--feature", short(key)), 2)
        assert "another `consort drive` is running" in second
        assert f"pid {first.pid}" in second
        refused = expect(run(root, "reject", "design", short(key), "--note", "spec: no"), 2)
        assert "another `consort drive` is running" in refused
    finally:
        agent.go(key, "spec")
        code = first.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "first.out").read_text()
    assert f"consort approve design {key}" in flat((tmp_path / "first.out").read_text())
    # The refused drive left no trace.
    assert len(of_type(root, EventType.DRIVE_STARTED)) == started + 1
    verified(root)


def test_agents_cannot_decide_for_the_product_owner(shared: Shared, tmp_path: Path) -> None:
    root = shared.root
    key = intake(root, "Owner only", user_facing=False)
    expect(run(root, "drive", "--feature", short(key)), 0)
    ledger = (root / ".consort" / "ledger.jsonl").read_bytes()
    as_agent = {"CONSORT_TASK": str(tmp_path / "task.json")}
    request = tmp_path / "more.md"
    request.write_text(REQUEST)
    for args in (
        ("drive", "--feature", short(key)),
        ("approve", "design", short(key)),
        ("reject", "design", short(key), "--note", "architecture: no"),
        ("retry", short(key), "--note", "again"),
        ("intake", "feature", "--file", str(request)),
    ):
        out = expect(run(root, *args, env=as_agent), 2)
        assert "agent turn cannot" in out, args
    assert (root / ".consort" / "ledger.jsonl").read_bytes() == ledger
    verified(root)
