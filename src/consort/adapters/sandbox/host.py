"""What of the host every sandbox sees: the system's own folders, read-only, and the toolchains.

System folders are named, not discovered by walking `/`: /usr, /etc, /sys and the top-level
links or folders a distribution keeps beside /usr (/bin, /lib, ...). Nothing else of `/` exists
in a sandbox unless a spec names it: not /home, /root, /var, /srv, /opt, /run or /mnt.

/etc is shown less what only a privileged reader could read: root keeps its owner's access to
/etc/shadow and friends even without capabilities, so every entry of /etc that is not
world-readable, yet readable by us, is masked. /etc/resolv.conf, when it is a link into /run
(systemd-resolved), has its target shown too: the network is shared, and names must resolve.

Toolchains are the interpreter that runs Consort (its prefixes and every folder on its
`sys.path`) and the folders on PATH; a folder of PATH outside the home folder is shown with its
prefix (`/opt/node/bin` -> `/opt/node`), one inside it only as itself (`~/.cargo` holds
credentials beside `bin`). Anything else a project needs is listed in consort.toml.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from consort.adapters.sandbox.paths import exists, is_dir, is_file

SYSTEM_FOLDERS = ("/usr", "/etc", "/sys")
# Beside /usr: links into it on merged-/usr systems, folders of their own on older ones.
SYSTEM_SIBLINGS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
RESOLV_CONF = Path("/etc/resolv.conf")


@dataclass(frozen=True)
class SystemView:
    """The read-only base of every sandbox on this host."""

    binds: tuple[Path, ...]  # read-only, at the same path
    links: tuple[tuple[str, Path], ...]  # (target, link) recreated as symlinks
    masked_files: tuple[Path, ...]  # inside a bind, shown as empty files
    masked_folders: tuple[Path, ...]  # inside a bind, shown as empty folders
    extra_files: tuple[Path, ...]  # single files outside the binds (resolv.conf's target)

    def arguments(self) -> list[str]:
        args: list[str] = []
        for target, link in self.links:
            args += ["--symlink", target, str(link)]
        for path in self.binds:
            args += ["--ro-bind", str(path), str(path)]
        for path in self.extra_files:
            args += ["--ro-bind", str(path), str(path)]
        for folder in self.masked_folders:
            args += ["--tmpfs", str(folder)]
        for file in self.masked_files:
            args += ["--ro-bind", os.devnull, str(file)]
        return args


@cache
def system_view() -> SystemView:
    """The host's system folders, computed once per process (the walk of /etc is the cost)."""
    binds: list[Path] = []
    links: list[tuple[str, Path]] = []
    for name in (*SYSTEM_FOLDERS, *SYSTEM_SIBLINGS):
        path = Path(name)
        if path.is_symlink():
            links.append((os.readlink(path), path))
        elif is_dir(path):
            binds.append(path)
    masked_files, masked_folders = _privileged_only(Path("/etc"))
    extra: list[Path] = []
    if RESOLV_CONF.is_symlink():
        target = RESOLV_CONF.resolve()
        if is_file(target) and not any(target.is_relative_to(b) for b in binds):
            extra.append(target)
    return SystemView(
        tuple(binds), tuple(links), tuple(masked_files), tuple(masked_folders), tuple(extra)
    )


def _privileged_only(root: Path) -> tuple[list[Path], list[Path]]:
    """Entries under `root` that we can read although the world cannot: files and folders."""
    files: list[Path] = []
    folders: list[Path] = []
    if not is_dir(root):
        return files, folders
    for folder, dirs, names in os.walk(root):
        for name in list(dirs):
            path = Path(folder, name)
            if _readable_only_by_privilege(path):
                folders.append(path)
                dirs.remove(name)  # masked whole: nothing below it needs looking at
        for name in names:
            path = Path(folder, name)
            if _readable_only_by_privilege(path):
                files.append(path)
    return files, folders


def _readable_only_by_privilege(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    if stat.S_ISLNK(info.st_mode):
        return False  # a link is judged where it leads (inside a bind, it leads to a masked file)
    return not info.st_mode & stat.S_IROTH and os.access(path, os.R_OK, follow_symlinks=False)


def toolchains(
    hidden_roots: Iterable[Path],
    home: Path | None,
    search_path: str,
    covered: Iterable[Path] = (),
) -> tuple[Path, ...]:
    """Folders agents may run programs from, read-only; none inside or above a hidden root.

    `hidden_roots` are folders no toolchain path may expose (the project's main checkout): a
    `sys.path` entry that is the project root (as `python -m` puts the current folder first) or
    lies in it would show the checkout, so it is left out, unless it is inside the interpreter's
    own prefix (a virtual environment kept in the project). `search_path` is the agent's PATH;
    folders under `covered` (the system's) are shown already.
    """
    hidden = [Path(os.path.abspath(p)) for p in hidden_roots]
    shown = [Path(p) for p in covered]
    prefixes = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    found: list[Path] = []

    def add(path: Path) -> None:
        path = Path(os.path.abspath(path))
        if not exists(path) or any(_within(path, root) for root in shown):
            return
        if home is not None and _within(home, path):
            return  # the home folder, or a folder above it
        inside_prefix = any(_within(path, p) for p in prefixes)
        for root in hidden:
            if _within(root, path) or (_within(path, root) and not inside_prefix):
                return
        found.append(path)

    for prefix in sorted(prefixes):
        add(prefix)
    for entry in sys.path:
        if entry:
            add(Path(entry))
    for entry in search_path.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        folder = Path(entry)
        if folder.name in {"bin", "sbin"} and not (home and _within(folder, home)):
            add(folder.parent)
        else:
            add(folder)
    # A folder inside another one found (a prefix's lib/python3.x) is shown with it already.
    return tuple(
        p for p in dict.fromkeys(found) if not any(p != q and _within(p, q) for q in found)
    )


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)
