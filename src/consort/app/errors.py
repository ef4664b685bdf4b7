"""The user-facing error type and the exit codes, as the front ends see them.

Re-exported from the core so that a front end depends on the command API alone.
"""

from consort.core.errors import ConsortError, ExitCode, UsageError

__all__ = ["ConsortError", "ExitCode", "UsageError"]
