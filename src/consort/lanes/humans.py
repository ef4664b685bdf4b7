"""Who may act as the product owner: never a process running inside an agent turn."""

from __future__ import annotations

import os
import sys

from consort.core.errors import UsageError

TASK_ENV = "CONSORT_TASK"


def refuse_agent(what: str) -> None:
    """Agents run with CONSORT_TASK set; the product owner's commands refuse them outright."""
    if os.environ.get(TASK_ENV):
        raise UsageError(f"{what} is the product owner's decision; an agent turn cannot make it")


def has_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()
