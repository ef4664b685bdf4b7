"""The demo's summary says that its database server is left running, and how to stop it."""

from __future__ import annotations

from pathlib import Path

import pytest

from consort.cli.demo import server_left_running


def test_a_running_server_is_named_with_the_command_that_stops_it(tmp_path: Path) -> None:
    lines = server_left_running(True, tmp_path)
    assert "PostgreSQL server is still running" in lines[0]
    assert lines[1].strip().startswith(f"stop it when you are done: cd {tmp_path} && ")
    assert lines[1].endswith(" db stop")


def test_a_stopped_server_is_not_mentioned(tmp_path: Path) -> None:
    assert server_left_running(False, tmp_path) == []


def test_the_setup_only_hint_names_the_gates_table(capsys: pytest.CaptureFixture[str]) -> None:
    from consort.cli import ui
    from consort.cli.demo import GATES_HINT

    for plain_output in (True, False):  # written by cli.plain, and by Rich
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ui, "plain_output", lambda stderr=False, p=plain_output: p)
            ui.say(GATES_HINT)
        assert 'set [gates] mode = "interactive"' in capsys.readouterr().out
