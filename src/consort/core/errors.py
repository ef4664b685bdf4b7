"""The one user-facing error type, and the exit codes of the command contract."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, as fixed by the command contract."""

    OK = 0
    ERROR = 1
    USAGE = 2  # usage or environment problem: the user must act
    ESCALATION = 3  # an escalation waits for a human
    INTEGRITY = 4  # drifted gate artifacts, or ledger/evidence that does not verify
    INTERRUPTED = 130  # stopped by Ctrl-C (or SIGTERM, SIGHUP): 128 + SIGINT, as shells report


class ConsortError(Exception):
    """An error shown to the user as one clean message (plus an optional fix), never a traceback."""

    def __init__(self, message: str, *, fix: str | None = None, code: ExitCode = ExitCode.ERROR):
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.code = code

    def __str__(self) -> str:
        return self.message if self.fix is None else f"{self.message} ({self.fix})"


class UsageError(ConsortError):
    """Bad input or an environment problem that the user must fix; exit code 2."""

    def __init__(self, message: str, *, fix: str | None = None):
        super().__init__(message, fix=fix, code=ExitCode.USAGE)
