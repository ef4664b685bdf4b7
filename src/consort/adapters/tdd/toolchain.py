"""What a project's command runs: the interpreter it resolves to and the tool that interpreter
imports (`python -m pytest` -> which Python, which pytest), or the Node package binary `npx`
would start. `consort doctor` shows it, so a user sees the project's toolchain, not Consort's.

A Python console script (`alembic`, `uvicorn`) is started with its own folder, not the folder it
runs in, first on the import path: the project's modules are then imported from wherever the
interpreter finds them, which for an editable install is the checkout it was made from, not the
tree under test. `python -m TOOL` imports them from the folder it runs in. pytest is the
exception: it puts the test roots on the import path itself.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from consort.adapters import proc
from consort.adapters.tdd.installed import interpreter_of
from consort.core.errors import ConsortError

ASK_TIMEOUT_S = 60.0
# Prints the interpreter's version, then "<origin>\t<version>" of the tool module (or "-").
_ASK = """\
import importlib.metadata, importlib.util, platform, sys
print(platform.python_version())
name = sys.argv[1]
try:
    spec = importlib.util.find_spec(name)
except Exception:
    spec = None
if spec is None:
    print("-")
else:
    where = spec.origin if spec.origin not in (None, "namespace") else ""
    if not where and spec.submodule_search_locations:
        where = next(iter(spec.submodule_search_locations), "")
    try:
        version = importlib.metadata.version(name)
    except Exception:
        version = ""
    print(where or "?", version, sep="\\t")
"""
# Console scripts that put the folder they run in on the import path themselves.
_SELF_ROOTED = frozenset({"pytest", "py.test"})
# How a question to a toolchain is run: as it is, or inside the run's sandbox (what a run sees).
Wrap = Callable[[list[str]], list[str]]


def _unwrapped(argv: list[str]) -> list[str]:
    return argv


@dataclass(frozen=True)
class PythonTool:
    """A command that runs Python: its interpreter and the tool module it imports."""

    interpreter: str
    version: str | None  # None: the interpreter could not be asked (`failure` says why)
    module: str
    module_origin: str | None  # None: the interpreter has no such module
    module_version: str
    console_script: bool  # started by a console script's `#!` line, not `python -m`
    failure: str = ""  # the last line the interpreter said when it could not be asked

    @property
    def imports_from_elsewhere(self) -> bool:
        """Whether the project's own modules may be imported from outside the run's folder."""
        return self.console_script and self.module not in _SELF_ROOTED

    def describe(self) -> str:
        if self.version is None:
            return f"{self.interpreter} does not run: {self.failure or 'no output'}"
        python = f"Python {self.version}"
        head = f"{self.interpreter} ({python})"
        if not self.module:  # `python manage.py test`: no tool module to name
            return head
        if self.module_origin is None:
            return f"{head}, which has no module {self.module}"
        version = f" {self.module_version}" if self.module_version else ""
        return f"{head}; {self.module}{version} from {self.module_origin}"


@dataclass(frozen=True)
class NodeTool:
    """`npx NAME`: the package binary the folder's node_modules holds, if any."""

    name: str
    binary: Path | None  # None: npx would fetch it from the registry
    node: str | None  # `node --version`, None when node is not on PATH

    def describe(self) -> str:
        node = f"node {self.node}" if self.node else "no node on PATH"
        if self.binary is None:
            return f"npx {self.name}: not in node_modules/.bin ({node})"
        return f"npx {self.name} -> {self.binary} ({node})"


def python_tool(
    command: Sequence[str], folder: Path, path: str | None, wrap: Wrap = _unwrapped
) -> PythonTool | None:
    """The interpreter and tool module `command` runs from `folder`; None when it starts no
    Python directly (`npx vitest`, `uv run pytest`, a shell script). The interpreter is asked
    through `wrap` (the run's sandbox, where a run finds it or not)."""
    interpreter = interpreter_of(command, path, folder)
    if interpreter is None:
        return None
    program = Path(command[0]).name
    console_script = not program.startswith("python")
    if console_script:
        module = program.replace("-", "_").removesuffix(".py")
    elif len(command) > 2 and command[1] == "-m":
        module = command[2].split(".")[0]
    else:
        module = ""
    if module and not module.isidentifier():
        return None
    said, failure = _run(wrap([interpreter, "-I", "-c", _ASK, module or "-"]), path)
    if said is None:
        return PythonTool(interpreter, None, module, None, "", console_script, failure)
    lines = said.splitlines()
    version = lines[0].strip() if lines else None
    found = lines[1] if len(lines) > 1 else "-"
    if found.strip() == "-" or not module:
        return PythonTool(interpreter, version, module, None, "", console_script)
    origin, _, module_version = found.partition("\t")
    return PythonTool(
        interpreter, version, module, origin.strip(), module_version.strip(), console_script
    )


def node_tool(
    command: Sequence[str], folder: Path, path: str | None, wrap: Wrap = _unwrapped
) -> NodeTool | None:
    """`npx NAME ...` run from `folder`: the binary of NAME it would start; None otherwise."""
    if len(command) < 2 or Path(command[0]).name != "npx":
        return None
    name = next((word for word in command[1:] if not word.startswith("-")), None)
    if name is None:
        return None
    binary = folder / "node_modules" / ".bin" / name
    return NodeTool(name, binary if binary.exists() else None, _node_version(path, wrap))


def _node_version(path: str | None, wrap: Wrap) -> str | None:
    node = shutil.which("node", path=path)
    if node is None:
        return None
    out, _ = _run(wrap([node, "--version"]), path)
    return (out.strip() or None) if out is not None else None


def _run(argv: Sequence[str], path: str | None) -> tuple[str | None, str]:
    """What `argv` printed, or None and the last line it said when it failed."""
    env: Mapping[str, str] = {"PATH": path or os.defpath}
    try:
        result = proc.run(argv, cwd="/", env=env, timeout=ASK_TIMEOUT_S, check=False)
    except ConsortError as exc:
        return None, exc.message
    if result.ok:
        return result.stdout, ""
    lines = [line.strip() for line in (result.stderr + result.stdout).splitlines() if line.strip()]
    return None, (lines[-1][:300] if lines else f"exit {result.returncode}")
