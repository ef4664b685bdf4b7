"""`consort dashboard --open` offers the VS Code extension when VS Code's `code` command is on
PATH, and runs nothing of VS Code's unasked; `--install-extension` runs `code
--install-extension VSIX` when asked. VS Code itself is a fake `code` on PATH in a temp dir,
which records its arguments; the browser a fake one named by BROWSER."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.dashboard_process import Dashboard, running_dashboard
from tests.helpers import consort

pytestmark = pytest.mark.integration

WAIT_S = 120  # only a hang fails

RECORDER = """#!{python}
import json, pathlib, sys
here = pathlib.Path(__file__).resolve().parent
(here / "{name}.args").write_text(json.dumps(sys.argv[1:]))
print("{says}")
sys.exit({code})
"""


def fake(folder: Path, name: str, *, says: str = "", code: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(RECORDER.format(python=sys.executable, name=name, says=says, code=code))
    program.chmod(0o755)
    return program


def recorded(folder: Path, name: str) -> list[str] | None:
    args = folder / f"{name}.args"
    return json.loads(args.read_text()) if args.exists() else None


@pytest.fixture
def bare_project(tmp_path: Path) -> Path:
    """Enough of a project for the dashboard to start: its config and state folder."""
    root = tmp_path / "project"
    (root / ".consort").mkdir(parents=True)
    (root / "consort.toml").write_text("")
    return root


def opened(dash: Dashboard) -> str:
    deadline = time.monotonic() + WAIT_S
    while "in your browser" not in dash.text() and "No browser" not in dash.text():
        assert time.monotonic() < deadline, dash.text()
        assert dash.process.poll() is None, dash.text()
        time.sleep(0.05)
    return dash.text()


def test_open_offers_the_extension_when_code_is_on_path_and_runs_nothing(bare_project, tmp_path):
    tools = tmp_path / "bin"
    fake(tools, "code")
    browser = fake(tmp_path / "browser", "browser")
    env = {"PATH": str(tools), "BROWSER": str(browser)}
    with running_dashboard(bare_project, terminal=False, env=env, args=["--open"]) as dash:
        text = opened(dash)
    assert "VS Code is here: the Consort extension shows this dashboard" in text
    assert "consort dashboard --install-extension --vsix" in text
    assert f"Opened {dash.url} in your browser." in text
    assert recorded(browser.parent, "browser") == [dash.url]
    assert recorded(tools, "code") is None  # offered, never run


def test_open_without_code_offers_nothing(bare_project, tmp_path):
    browser = fake(tmp_path / "browser", "browser")
    env = {"PATH": str(tmp_path / "empty"), "BROWSER": str(browser)}
    with running_dashboard(bare_project, terminal=False, env=env, args=["--open"]) as dash:
        text = opened(dash)
    assert "VS Code" not in text and "extension" not in text
    assert recorded(browser.parent, "browser") == [dash.url]


def test_install_extension_runs_code_with_the_package_when_asked(tmp_path):
    tools = tmp_path / "bin"
    fake(tools, "code", says="Extension 'consort-vscode.vsix' was successfully installed.")
    package = tmp_path / "consort-vscode.vsix"
    package.write_bytes(b"PK\x03\x04")  # what is in it is VS Code's to check, not Consort's
    done = consort(
        "dashboard",
        "--install-extension",
        "--vsix",
        str(package),
        cwd=tmp_path,
        env={"PATH": str(tools)},
    )
    assert done.returncode == 0, done.stderr
    assert recorded(tools, "code") == ["--install-extension", str(package.resolve())]
    assert f"Installed {package.resolve()} into VS Code" in done.stdout
    assert "successfully installed" in done.stdout


def test_install_extension_says_when_code_fails(tmp_path):
    tools = tmp_path / "bin"
    fake(tools, "code", says="Failed Installing Extensions: corrupt package", code=1)
    package = tmp_path / "consort-vscode.vsix"
    package.write_bytes(b"not a zip")
    done = consort(
        "dashboard",
        "--install-extension",
        "--vsix",
        str(package),
        cwd=tmp_path,
        env={"PATH": str(tools)},
    )
    assert done.returncode == 1
    assert "VS Code did not install the extension" in done.stderr
    assert "corrupt package" in done.stderr


def test_install_extension_needs_code_and_a_package(tmp_path):
    package = tmp_path / "consort-vscode.vsix"
    package.write_bytes(b"PK")
    no_code = consort(
        "dashboard",
        "--install-extension",
        "--vsix",
        str(package),
        cwd=tmp_path,
        env={"PATH": str(tmp_path / "empty")},
    )
    assert no_code.returncode == 2 and "`code` command is not on PATH" in no_code.stderr
    tools = tmp_path / "bin"
    fake(tools, "code")
    missing = consort(
        "dashboard",
        "--install-extension",
        "--vsix",
        str(tmp_path / "none.vsix"),
        cwd=tmp_path,
        env={"PATH": str(tools)},
    )
    assert missing.returncode == 2 and "no extension package at" in missing.stderr
    assert "scripts/vscode-extension.sh" in missing.stderr
    assert recorded(tools, "code") is None


def test_editor_mode_opens_no_browser(bare_project, tmp_path):
    browser = fake(tmp_path / "browser", "browser")
    done = consort(
        "dashboard", "--editor", "--open", cwd=bare_project, env={"BROWSER": str(browser)}
    )
    assert done.returncode == 2 and "drop --open" in done.stderr
    assert recorded(browser.parent, "browser") is None
