"""`consort spike NAME` is `consort spike start NAME`; `consort experiment` says it is not built."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from consort.cli.main import cli


def test_a_first_word_that_is_not_a_subcommand_starts_that_spike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[tuple[str, str | None, str | None]] = []

    def fake_start(project: object, name: str, feature: str | None, ttl: str | None) -> None:
        started.append((name, feature, ttl))
        raise SystemExit(0)

    monkeypatch.setattr("consort.app.spike.start", fake_start)
    monkeypatch.setattr("consort.cli.spike.project", lambda: None)
    result = CliRunner().invoke(cli, ["spike", "try-brin", "--for", "F1", "--ttl", "90m"])
    assert result.exit_code == 0, result.output
    assert started == [("try-brin", "F1", "90m")]


def test_spike_help_lists_its_subcommands() -> None:
    result = CliRunner().invoke(cli, ["spike", "--help"])
    assert result.exit_code == 0
    for word in ("start", "end", "list", "gc"):
        assert word in result.output
    start = CliRunner().invoke(cli, ["spike", "start", "--help"])
    assert start.exit_code == 0 and "--ttl" in start.output and "--for" in start.output


@pytest.mark.parametrize("args", [["F1/S1", "--approaches", "3"], ["compare", "F1/S1"], []])
def test_experiment_says_it_is_not_built_and_does_nothing(args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["experiment", *args])
    assert result.exit_code == 2
    assert "not built yet" in result.output
