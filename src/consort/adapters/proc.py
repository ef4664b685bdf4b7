"""The one way Consort runs a subprocess: argv lists, timeouts, and errors that carry everything."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from consort.core.errors import ConsortError


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class CommandFailed(ConsortError):
    """A subprocess exited non-zero (or timed out); carries the command, code and output."""

    def __init__(self, result: Completed, *, timed_out: bool = False):
        what = "timed out" if timed_out else f"exited {result.returncode}"
        detail = (result.stderr.strip() or result.stdout.strip()).splitlines()
        tail = detail[-1] if detail else ""
        super().__init__(f"`{' '.join(result.argv)}` {what}" + (f": {tail}" if tail else ""))
        self.result = result
        self.timed_out = timed_out


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    input_text: str | None = None,
    timeout: float | None = 120.0,
    check: bool = True,
) -> Completed:
    """Run argv to completion and capture its output.

    `env` replaces the environment entirely (for agent processes that must not inherit secrets);
    `extra_env` adds to the current one.
    """
    args = tuple(os.fspath(a) for a in argv)
    environment = dict(os.environ if env is None else env)
    if extra_env:
        environment.update(extra_env)
    try:
        proc = subprocess.run(
            args,
            cwd=cwd,
            env=environment,
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise ConsortError(f"cannot run `{args[0]}`: program not found") from exc
    except subprocess.TimeoutExpired as exc:
        result = Completed(args, -1, _text(exc.stdout), _text(exc.stderr))
        raise CommandFailed(result, timed_out=True) from exc
    result = Completed(args, proc.returncode, proc.stdout, proc.stderr)
    if check and not result.ok:
        raise CommandFailed(result)
    return result


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data
