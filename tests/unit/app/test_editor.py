"""What `consort dashboard --open` says about the VS Code extension, with and without a package."""

from __future__ import annotations

from pathlib import Path

import pytest

from consort.app import editor


def test_the_offer_names_the_package_when_one_was_built(tmp_path: Path) -> None:
    package = tmp_path / "consort-vscode.vsix"
    lines = editor.ExtensionOffer(tmp_path / "code", package).lines()
    assert lines[0].startswith("VS Code is here")
    assert f"consort dashboard --install-extension --vsix {package}" in lines[1]
    assert f"`code --install-extension {package}`" in lines[1]


def test_the_offer_says_how_to_build_the_package_otherwise(tmp_path: Path) -> None:
    (line,) = editor.ExtensionOffer(tmp_path / "code", None).lines()[1:]
    assert "bash scripts/vscode-extension.sh" in line
    assert "--vsix editors/vscode/consort-vscode.vsix" in line


def test_no_code_on_path_no_offer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert editor.offer() is None
    code = tmp_path / "code"
    code.write_text("#!/bin/sh\n")
    code.chmod(0o755)
    found = editor.offer()
    assert found is not None and found.code == code
