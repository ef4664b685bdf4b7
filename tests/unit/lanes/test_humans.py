"""Who counts as a person for this process: its terminal, or the editor that started it, only
while `editor_channel` is open (the dashboard started with --editor, for as long as it serves)."""

from __future__ import annotations

import pytest

from consort.lanes import humans


def test_without_a_terminal_nobody_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(humans, "has_terminal", lambda: False)
    assert humans.person_present() is False


def test_the_editor_channel_stands_for_a_person_while_it_is_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(humans, "has_terminal", lambda: False)
    with humans.editor_channel():
        assert humans.person_present() is True
    assert humans.person_present() is False


def test_the_channel_closes_when_the_dashboard_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(humans, "has_terminal", lambda: False)
    with pytest.raises(OSError), humans.editor_channel():
        raise OSError("the port is taken")
    assert humans.person_present() is False


def test_an_agent_turn_is_refused_whatever_the_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSORT_TASK", "/tmp/task.json")
    with humans.editor_channel(), pytest.raises(humans.UsageError):
        humans.refuse_agent("approving a gate")
