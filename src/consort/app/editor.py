"""The VS Code extension, as `consort dashboard` offers it: where VS Code's `code` command and
the extension's package (.vsix) are, and installing it when, and only when, the person asks.

The package is built from Consort's source (`bash scripts/vscode-extension.sh` writes
editors/vscode/consort-vscode.vsix); an installed Consort finds it there when it runs from that
checkout, and otherwise only where `--vsix` says. Nothing here runs `code` unasked.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from consort.core.errors import ConsortError, UsageError

VSIX_NAME = "consort-vscode.vsix"
BUILD = "bash scripts/vscode-extension.sh"  # in a checkout of Consort's source
INSTALL_TIMEOUT_S = 300.0


def source_vsix() -> Path | None:
    """Where the build writes the package, when this Consort runs from a source checkout
    (an editable install); None for an installed copy, which ships no package."""
    here = Path(__file__).resolve()
    checkout = here.parents[3]
    if here.parents[2].name != "src" or not (checkout / "pyproject.toml").is_file():
        return None
    return checkout / "editors" / "vscode" / VSIX_NAME


@dataclass(frozen=True)
class ExtensionOffer:
    code: Path  # VS Code's command line
    vsix: Path | None  # the package, if one was found

    def lines(self) -> list[str]:
        """What `consort dashboard --open` says about it."""
        said = [
            "VS Code is here: the Consort extension shows this dashboard in an editor panel, "
            "with the branch, lane and next action in its status bar."
        ]
        if self.vsix is not None:
            said.append(
                f"  To install it: consort dashboard --install-extension --vsix {self.vsix}"
                f"  (runs `code --install-extension {self.vsix}`)"
            )
        else:
            said.append(
                f"  To install it, build it from Consort's source ({BUILD}), then: "
                f"consort dashboard --install-extension --vsix editors/vscode/{VSIX_NAME}"
            )
        return said


def find_code() -> Path | None:
    found = shutil.which("code")
    return Path(found) if found else None


def offer() -> ExtensionOffer | None:
    """The extension to offer, when VS Code's `code` is on PATH (None: nothing to offer)."""
    code = find_code()
    if code is None:
        return None
    built = source_vsix()
    return ExtensionOffer(code, built if built is not None and built.is_file() else None)


@dataclass(frozen=True)
class Installed:
    code: Path
    vsix: Path
    output: str

    def as_json(self) -> dict[str, str]:
        return {"code": str(self.code), "vsix": str(self.vsix), "output": self.output}


def install(vsix: Path | None) -> Installed:
    """`code --install-extension VSIX`, asked for by the person (`--install-extension`)."""
    from consort.adapters.proc import CommandFailed, run

    code = find_code()
    if code is None:
        raise UsageError(
            "VS Code's `code` command is not on PATH",
            fix="in VS Code: Shell Command: Install 'code' command in PATH",
        )
    given = vsix or source_vsix()
    if given is None:
        raise UsageError(
            "this Consort is an installed copy, which ships no extension package",
            fix=f"build it from Consort's source ({BUILD}) and give it with --vsix",
        )
    package = given.resolve()
    if not package.is_file():
        raise UsageError(
            f"there is no extension package at {package}",
            fix=f"build it from Consort's source ({BUILD}) and give it with --vsix",
        )
    try:
        done = run([code, "--install-extension", package], timeout=INSTALL_TIMEOUT_S)
    except CommandFailed as exc:
        raise ConsortError(f"VS Code did not install the extension: {exc.message}") from exc
    return Installed(code, package, done.stdout.strip())
