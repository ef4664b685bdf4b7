"""Who may act as the product owner: never a process running inside an agent turn.

A person reaches a Consort process through its terminal (standard input and output both
terminals), or, for `consort dashboard --editor` only, through the editor extension that started
it over pipes and holds its token: that process declares the channel once, at its start.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from consort.core.errors import UsageError

TASK_ENV = "CONSORT_TASK"


class _Channels:
    editor = False  # set only by the dashboard started for an editor, for its lifetime


_CHANNELS = _Channels()


def refuse_agent(what: str) -> None:
    """Agents run with CONSORT_TASK set; the product owner's commands refuse them outright."""
    if os.environ.get(TASK_ENV):
        raise UsageError(f"{what} is the product owner's decision; an agent turn cannot make it")


def has_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def person_present() -> bool:
    """A person can answer this process: at its terminal, or through the editor that started it."""
    return has_terminal() or _CHANNELS.editor


@contextlib.contextmanager
def editor_channel() -> Iterator[None]:
    """While the block runs, the editor that started this process stands for its person."""
    previous, _CHANNELS.editor = _CHANNELS.editor, True
    try:
        yield
    finally:
        _CHANNELS.editor = previous
