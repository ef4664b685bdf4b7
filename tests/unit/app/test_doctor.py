"""`consort doctor`'s agent checks: installed?, version, logged in? — and never a secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consort.adapters.agents import claude, codex
from consort.app.doctor import CheckState, _agent_checks
from tests.fakes import install_fakes

SECRET = "sk-ant-api03-very-secret-value"


def checks_by_name(monkeypatch: pytest.MonkeyPatch, path: str) -> dict[str, tuple[CheckState, str]]:
    monkeypatch.setenv("PATH", path)
    return {c.name: (c.state, c.detail) for c in _agent_checks()}


def test_not_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    found = checks_by_name(monkeypatch, str(tmp_path))
    assert found["claude"][0] is CheckState.INFO
    assert "not installed" in found["claude"][1]
    assert "npm install -g @anthropic-ai/claude-code" in found["claude"][1]
    assert "not installed" in found["codex"][1]
    assert "claude login" not in found


def test_installed_versions_and_logins_without_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bin_dir = install_fakes(tmp_path / "bin")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_OAUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    # Its output shows part of a key. Turns find the login in ~/.codex, as doctor asks.
    (tmp_path / "home" / ".codex").mkdir(parents=True)
    (tmp_path / "home" / ".codex" / "auth.json").write_text('{"mode": "apikey"}')
    found = checks_by_name(monkeypatch, f"{bin_dir}:/usr/bin:/bin")

    assert found["claude"] == (CheckState.INFO, f"2.0.0 (Claude Code) ({bin_dir / 'claude'})")
    assert found["claude login"][0] is CheckState.OK
    assert "an API key in the environment (ANTHROPIC_API_KEY" in found["claude login"][1]
    assert 'env_allow = ["ANTHROPIC_API_KEY"]' in found["claude login"][1]
    assert found["codex"][1].startswith("codex-cli 0.171.0")
    assert found["codex login"] == (CheckState.OK, "logged in (API key)")
    everything = json.dumps(found)
    assert SECRET not in everything
    assert "sk-" not in everything


def test_logins_found_on_disk_and_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text('{"claudeAiOauth": {"accessToken": "x"}}')
    env = {"HOME": str(home)}
    text, logged_in = claude.login_status(env=env)
    assert logged_in is True
    assert text == f"logged in (credentials in {home / '.claude'})"
    assert "accessToken" not in text

    monkeypatch.setattr(claude.sys, "platform", "linux")
    text, logged_in = claude.login_status(env={"HOME": str(tmp_path / "nobody")})
    assert logged_in is False
    assert "claude /login" in text

    bin_dir = install_fakes(tmp_path / "bin")
    monkeypatch.setenv("FAKE_CODEX_LOGIN", "none")
    text, logged_in = codex.login_status(str(bin_dir / "codex"))
    assert (logged_in, text.startswith("not logged in: run `codex login`")) == (False, True)
    monkeypatch.setenv("FAKE_CODEX_LOGIN", "chatgpt")
    assert codex.login_status(str(bin_dir / "codex")) == ("logged in (ChatGPT account)", True)
