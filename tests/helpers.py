"""Shared test helpers: run the real `consort` CLI as a child process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # found wherever a test module sits
PAIR_AGENTS = Path(__file__).resolve().parent / "agents" / "pair"


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
