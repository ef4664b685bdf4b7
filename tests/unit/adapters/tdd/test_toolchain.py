"""What a project's command resolves to, asked of the real interpreter it names: its Python
version and the tool module it imports, a console script's interpreter, and `npx`'s binary.
`consort doctor` reports these as the project's, not Consort's own Python."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

import pytest

from consort.adapters.tdd.toolchain import node_tool, python_tool
from consort.app.doctor import CheckState, _toolchain_check

PATH = os.environ.get("PATH")


def _console_script(folder: Path, name: str) -> Path:
    script = folder / name
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.exit(0)\n")
    script.chmod(0o755)
    return script


def test_python_m_pytest_names_the_interpreter_and_the_pytest_it_imports(tmp_path: Path) -> None:
    tool = python_tool([sys.executable, "-m", "pytest", "-q"], tmp_path, PATH)
    assert tool is not None
    assert tool.interpreter == sys.executable and tool.version == platform.python_version()
    assert tool.module == "pytest" and tool.module_version == pytest.__version__
    assert tool.module_origin == str(Path(pytest.__file__))
    assert not tool.console_script and not tool.imports_from_elsewhere
    check = _toolchain_check("test command", [sys.executable, "-m", "pytest"], tmp_path, "head")
    assert check is not None and check.state is CheckState.OK, check
    assert f"pytest {pytest.__version__} from " in check.detail


def test_a_module_the_interpreter_lacks_is_a_failure_with_its_fix(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "no_such_runner_here", "upgrade"]
    tool = python_tool(command, tmp_path, PATH)
    assert tool is not None and tool.module_origin is None
    check = _toolchain_check("migrate command", command, tmp_path, "head")
    assert check is not None and check.state is CheckState.FAIL
    assert "which has no module no_such_runner_here" in check.detail
    assert "fix: install no_such_runner_here" in check.detail


def test_a_console_script_other_than_pytest_is_warned_about(tmp_path: Path) -> None:
    """alembic is one of Consort's own dependencies, so this interpreter has it."""
    alembic = _console_script(tmp_path, "alembic")
    tool = python_tool([str(alembic), "upgrade", "head"], tmp_path, PATH)
    assert tool is not None and tool.console_script and tool.interpreter == sys.executable
    assert tool.imports_from_elsewhere and tool.module_origin is not None
    check = _toolchain_check("migrate command", [str(alembic), "upgrade"], tmp_path, "head")
    assert check is not None and check.state is CheckState.WARN, check
    assert "is a console script" in check.detail
    assert 'fix: run it as ["python", "-m", "alembic", ...]' in check.detail
    pytest_script = _console_script(tmp_path, "pytest")
    tool = python_tool([str(pytest_script)], tmp_path, PATH)
    assert tool is not None and tool.console_script and not tool.imports_from_elsewhere
    check = _toolchain_check("test command", [str(pytest_script)], tmp_path, "head")
    assert check is not None and check.state is CheckState.OK, check


def test_npx_names_the_folders_binary_or_says_it_is_missing(tmp_path: Path) -> None:
    assert node_tool(["npx"], tmp_path, PATH) is None
    assert node_tool(["node", "server.js"], tmp_path, PATH) is None
    missing = node_tool(["npx", "vitest", "run"], tmp_path, PATH)
    assert missing is not None and missing.binary is None
    assert "not in node_modules/.bin" in missing.describe()
    binary = tmp_path / "node_modules" / ".bin" / "vitest"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    found = node_tool(["npx", "--yes", "vitest", "run"], tmp_path, PATH)
    assert found is not None and found.binary == binary
    check = _toolchain_check("test command", ["npx", "vitest", "run"], tmp_path, "head")
    assert check is not None and f"npx vitest -> {binary}" in check.detail


def test_a_command_that_starts_no_python_or_npx_is_not_described(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    assert python_tool([str(script)], tmp_path, PATH) is None
    assert _toolchain_check("test command", [str(script)], tmp_path, "head") is None
