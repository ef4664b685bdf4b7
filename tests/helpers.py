"""Shared test helpers: run the real `consort` CLI as a child process, read a project's ledger,
and set up the mini project (tests/fixtures/mini) for command agents."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # found wherever a test module sits
PAIR_AGENTS = Path(__file__).resolve().parent / "agents" / "pair"
MINI = FIXTURES / "mini"  # a counter: the feature, stories and code the test agents write
TDD_AGENT = Path(__file__).resolve().parent / "agents" / "tdd_agent.py"
MINI_FEATURE = "F1-counter"


def pair_agent(kind: str, fixtures: Path, option: str | None = None) -> list[str]:
    """The command of the navigator/driver pair `kind` (tests/agents/pair: express, node,
    adopt), run by this interpreter on the design artifacts in `fixtures`."""
    return [sys.executable, str(PAIR_AGENTS), kind, str(fixtures), *([option] if option else [])]


def consort(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 180,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m consort ARGS` in `cwd`; never raises on a non-zero exit."""
    environment = dict(os.environ)
    environment.pop("CONSORT_FAULT", None)
    environment["COLUMNS"] = "200"  # keep Rich from wrapping messages the tests read
    if env:
        environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "consort", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        input=input_text,
        stdin=None if input_text is not None else subprocess.DEVNULL,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def env_url(checkout: Path) -> str | None:
    for line in (checkout / ".env").read_text().splitlines():
        if line.startswith("DATABASE_URL="):
            return line.split("=", 1)[1]
    return None


def processes_naming(marker: str) -> list[int]:
    """Host PIDs of every live (not zombie) process whose command line holds `marker`: inside a
    sandbox a process knows only the PIDs of its own namespace, so tests find it by name."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if marker.encode() in cmdline and stat[stat.rfind(")") + 2] not in "ZX":
            found.append(int(entry.name))
    return found


def events(root: Path) -> list[dict]:
    """Every event of the ledger of the project at `root`, oldest first."""
    lines = (root / ".consort" / "ledger.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def start_mini_project(root: Path, configure: Callable[[Path], object]) -> None:
    """`consort init` a project at `root`, let `configure` write its consort.toml, commit that,
    and take in the mini project's feature (a counter)."""
    ok(consort("init", str(root), cwd=root.parent))
    configure(root)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "configure")
    ok(consort("intake", "feature", "--title", "Counter", cwd=root, input_text="A counter."))


def configure_cheat(
    root: Path,
    marker: str,
    role: str,
    cheat: Path,
    *args: str,
    sandbox: str | None = None,
) -> None:
    """Write the consort.toml of a mini project where the command agent `cheat` (run as
    `cheat MINI MARKER TDD_AGENT ARGS...`) plays `role` and the honest TDD agent, tagged with
    `marker`, every other role: pytest from this interpreter, no migrations, interactive gates,
    one retry of a failed turn; `sandbox` set for every turn if given."""
    honest = [sys.executable, str(TDD_AGENT), str(MINI), "honest", marker]
    cheating = [sys.executable, str(cheat), str(MINI), marker, str(TDD_AGENT), *args]
    sandboxed = f"sandbox = {json.dumps(sandbox)}\n" if sandbox is not None else ""
    (root / "consort.toml").write_text(
        f"""
[test]
command = {json.dumps([sys.executable, "-m", "pytest", "-q"])}
[migrate]
command = []
[gates]
mode = "interactive"
[turns]
retries = 1
[agents]
default = "command"
{sandboxed}command = {json.dumps(honest)}
[agents.{role}]
command = {json.dumps(cheating)}
"""
    )


def at_terminal(root: Path, *args: str, answer: str = "n") -> tuple[int, bytes]:
    """`consort ARGS` on a real pseudo-terminal, answering a confirmation: its exit, its bytes."""
    master, slave = os.openpty()
    env = dict(os.environ, COLUMNS="200")
    env.pop("CONSORT_TASK", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "consort", *args],
        cwd=root,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    seen, answered = b"", False
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            if not answered and b"[y/N]" in seen:
                os.write(master, answer.encode() + b"\n")
                answered = True
            if child.poll() is not None and not ready:
                break
        return child.wait(timeout=30), seen
    finally:
        os.close(master)
        if child.poll() is None:
            child.kill()
