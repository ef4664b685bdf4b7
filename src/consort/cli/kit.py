"""What every command module shares: the one error handler, and the project it works on."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click

from consort.app.errors import ConsortError, ExitCode

if TYPE_CHECKING:
    from consort.app.project import Project

F = TypeVar("F", bound=Callable[..., Any])
DEBUG_ENV = "CONSORT_DEBUG"


def handled(func: F) -> F:
    """Turn Consort's errors into one clean message and the contract's exit code."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from consort.cli import ui

        try:
            return func(*args, **kwargs)
        except ConsortError as exc:
            ui.error(exc.message, exc.fix)
            sys.exit(int(exc.code))
        except KeyboardInterrupt:
            ui.stopped("interrupted (Ctrl-C)", ["run the same command again to resume"])
            sys.exit(int(ExitCode.INTERRUPTED))
        except click.exceptions.Abort:  # a confirmation prompt met the end of its input
            ui.error("aborted: no answer to the question")
            sys.exit(int(ExitCode.USAGE))
        except Exception as exc:
            if os.environ.get(DEBUG_ENV):
                raise
            ui.error(
                f"unexpected {type(exc).__name__}: {exc}",
                f"this is a bug in Consort; run again with {DEBUG_ENV}=1 for the traceback",
            )
            sys.exit(int(ExitCode.ERROR))

    return wrapper  # type: ignore[return-value]


class LazyChoice(click.Choice[str]):
    """A `click.Choice` whose choices are read when first needed (parsing, help, completion),
    not when its command is defined: every command module is imported when Consort starts, and
    the modules the choices come from can be heavy (an enum that sits beside pydantic models)."""

    def __init__(self, load: Callable[[], Sequence[str]]) -> None:
        self._load = load
        self._loaded: tuple[str, ...] | None = None
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        if self._loaded is None:
            self._loaded = tuple(self._load())
        return self._loaded

    @choices.setter
    def choices(self, _given: Sequence[str]) -> None:
        """`Choice.__init__` sets the choices; they come from the loader instead."""


def project() -> Project:
    """The project at or above the working directory."""
    from consort.app.project import find_project

    return find_project()


def confirm(question: str) -> bool:
    """Ask the person at the terminal; no is the default. The question shows what it covers
    as it is: a control sequence in an artifact is shown as its escape, never acted on."""
    from consort.cli.plain import visible

    return click.confirm(visible(question), default=False)
