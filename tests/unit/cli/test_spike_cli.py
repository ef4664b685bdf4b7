"""`consort spike NAME` is `consort spike start NAME`; `consort experiment F/S` is its `run`."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

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


def test_a_first_word_that_is_not_a_subcommand_races_that_story(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raced: list[tuple[str, int]] = []

    class _Project:
        class config:
            class experiment:
                approaches: ClassVar[dict[str, object]] = {}

    def fake_run(project: object, story: str, count: int, progress: object) -> None:
        raced.append((story, count))
        raise SystemExit(0)

    monkeypatch.setattr("consort.app.experiment.run", fake_run)
    monkeypatch.setattr("consort.cli.experiment.project", _Project)
    result = CliRunner().invoke(cli, ["experiment", "F1/S1", "--approaches", "3"])
    assert result.exit_code == 0, result.output
    assert raced == [("F1/S1", 3)]


def test_experiment_help_lists_its_subcommands() -> None:
    result = CliRunner().invoke(cli, ["experiment", "--help"])
    assert result.exit_code == 0
    for word in ("run", "compare", "select", "discard"):
        assert word in result.output
