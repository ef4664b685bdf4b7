"""What a sandbox shows, as a typed spec, and the bubblewrap arguments that build it.

The sandbox's file system starts empty. On it, in this order:

1. the host's system folders, read-only (`host.SystemView`: /usr, /etc less what only a
   privileged reader could read, the /bin and /lib links, /sys), a fresh /proc of the sandbox's
   own PID namespace and a minimal /dev;
2. every other path of the spec, shallowest first, so that a path bound inside another is laid
   over it: a *private* folder is a fresh tmpfs (/tmp, the home folder); a *mask* hides what a
   bind above it would show (an empty tmpfs for a folder, /dev/null for a file); a *read-only*
   or *writable* bind shows the host's path at the same place.

Paths keep their host names inside (a tree at /a/b is at /a/b in the sandbox too), so absolute
paths in task.json, in git's worktree links and in an agent's own messages mean the same on
both sides. What is not named is not there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path

from consort.adapters.sandbox.host import SystemView
from consort.adapters.sandbox.paths import exists, is_dir


class Access(IntEnum):
    """How a path is shown. At the same path the higher value is laid last and wins."""

    HIDDEN = 0  # masked where shown: an empty folder, or an empty file that cannot be read
    PRIVATE = 1  # always a fresh, empty, writable folder of this sandbox's own (/tmp, home)
    WRITABLE = 2
    READ_ONLY = 3  # a path listed both ways stays read-only


@dataclass(frozen=True)
class SandboxSpec:
    """Everything one sandboxed process may see, by path (absolute, as on the host).

    `hidden` paths are masked only where something bound above them would show them; a hidden
    path nobody binds is already absent. `private` folders (default /tmp, /var/tmp) and `home`
    are fresh, empty and writable for this process alone.
    """

    workdir: Path
    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    home: Path | None = None
    private: tuple[Path, ...] = (Path("/tmp"), Path("/var/tmp"))  # noqa: S108 -- fresh, not shared
    env: Mapping[str, str] = field(default_factory=dict)  # set inside, over the process's own
    unset: tuple[str, ...] = ()  # variables of the process's own that the inside does not get
    # A network namespace of its own (loopback alone, brought up by bubblewrap) instead of the
    # machine's network: what it may reach is bound in as a unix socket (a run's `gate`).
    isolated_network: bool = False

    def layers(self) -> list[tuple[Path, Access]]:
        """Every path with how it is shown, in the order the mounts are made."""
        entries: dict[tuple[Path, Access], None] = {}
        for path in (*self.private, *((self.home,) if self.home else ())):
            entries[(_clean(path), Access.PRIVATE)] = None
        for paths, access in (
            (self.hidden, Access.HIDDEN),
            (self.writable, Access.WRITABLE),
            (self.read_only, Access.READ_ONLY),
        ):
            for path in paths:
                entries[(_clean(path), access)] = None
        return sorted(entries, key=lambda entry: (len(entry[0].parts), entry[1], str(entry[0])))


class SpecError(Exception):
    """The spec asks for something that cannot be built (a writable path that does not exist)."""


def bwrap_arguments(spec: SandboxSpec, system: SystemView, *, drop_capabilities: bool) -> list[str]:
    """bubblewrap's options for `spec` (without the program, the status fd or `--`)."""
    args = [
        "--die-with-parent",  # Consort gone (even by kill -9): the sandbox is gone
        "--unshare-pid",  # its own PID namespace: its processes end with it, ours are unseen
        "--unshare-ipc",  # no System V shared memory of the host's (PostgreSQL's among them)
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--new-session",  # no TIOCSTI into a terminal of ours
    ]
    if spec.isolated_network:
        args.append("--unshare-net")
    if drop_capabilities:
        # Run by root, bwrap would leave the process its capabilities; with them it could
        # remount what is read-only here. Without them, root is an ordinary owner of files.
        args += ["--cap-drop", "ALL"]
    args += system.arguments()
    args += ["--proc", "/proc", "--dev", "/dev"]
    shown: list[tuple[Path, Access]] = [(path, Access.READ_ONLY) for path in system.binds]
    masks: list[str] = []
    layers = spec.layers()
    binds = [path for path, access in layers if access in {Access.WRITABLE, Access.READ_ONLY}]
    for path, access in layers:
        holds_a_bind = any(b != path and _within(b, path) for b in binds)
        made = _layer(path, access, shown, holds_a_bind=holds_a_bind)
        if access is Access.HIDDEN and made[:1] == ["--tmpfs"]:
            masks.append(str(path))
        args += made
    # A masking folder, and the empty root the mounts were made on, take no writes either; done
    # last, as the folders for the mounts inside them had to be made first (a remount does not
    # reach the mounts inside).
    for mask in masks:
        args += ["--remount-ro", mask]
    args += ["--remount-ro", "/"]
    for name in spec.unset:
        args += ["--unsetenv", name]
    for name, value in spec.env.items():
        args += ["--setenv", name, value]
    args += ["--chdir", str(_clean(spec.workdir))]
    return args


def _layer(
    path: Path, access: Access, shown: list[tuple[Path, Access]], *, holds_a_bind: bool
) -> list[str]:
    if access is Access.PRIVATE:
        shown.append((path, access))
        return ["--tmpfs", str(path)]
    if access is Access.HIDDEN:
        return _mask(path, shown, holds_a_bind=holds_a_bind)
    return _bind(path, access, shown)


def _mask(path: Path, shown: list[tuple[Path, Access]], *, holds_a_bind: bool) -> list[str]:
    """Masked where a bind above would show it, and where a bind inside it needs a folder for
    its mount point: that folder is then an empty, read-only one, not a writable stand-in made
    on a private /tmp. Anywhere else it is absent already."""
    above = _nearest(path, shown)
    shown_above = above is not None and above not in {Access.HIDDEN, Access.PRIVATE}
    if not exists(path) or not (shown_above or holds_a_bind):
        return []
    shown.append((path, Access.HIDDEN))
    if is_dir(path):
        return ["--tmpfs", str(path)]
    return ["--ro-bind", os.devnull, str(path)]


def _bind(path: Path, access: Access, shown: list[tuple[Path, Access]]) -> list[str]:
    if not exists(path):
        if access is Access.WRITABLE:
            raise SpecError(f"{path} was to be writable in the sandbox but does not exist")
        return []  # an optional read-only path (an input not written yet, a missing toolchain)
    if _nearest(path, shown) is access:
        return []  # shown so already, by the folder it is in
    shown.append((path, access))
    flag = "--bind" if access is Access.WRITABLE else "--ro-bind"
    return [flag, str(path), str(path)]


def _nearest(path: Path, shown: Sequence[tuple[Path, Access]]) -> Access | None:
    """How the nearest shown ancestor of `path` (or the path itself) is shown; None: not at all."""
    nearest: tuple[Path, Access] | None = None
    for candidate, access in shown:
        inside = _within(path, candidate)
        if inside and (nearest is None or len(candidate.parts) >= len(nearest[0].parts)):
            nearest = (candidate, access)
    return None if nearest is None else nearest[1]


def _clean(path: Path) -> Path:
    """Absolute and normalised without resolving symlinks (the host's name is the name)."""
    return Path(os.path.normpath(os.path.abspath(path)))


def under_any(path: Path, roots: Iterable[Path]) -> bool:
    return any(_within(path, root) for root in roots)


def _within(path: Path, root: Path) -> bool:
    """`path` is `root` or inside it, for absolute, normalised paths (`_clean`): compared as
    text, as a run's spec compares every pair of its paths (a test run's has hundreds) and
    `PurePath.is_relative_to` costs a failed `relative_to` each time it says no."""
    inner, outer = str(path), str(root)
    if inner == outer:
        return True
    prefix = outer if outer.endswith("/") else outer + "/"
    return inner.startswith(prefix)
