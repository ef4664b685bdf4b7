"""The env file (`[env] file`, `.env` by default): DATABASE_URL follows the checked-out
branch's database; other lines stay untouched. A file git tracks is never written: it is the
user's, and a branch login in it would be one `git commit -a` away from the repository."""

from __future__ import annotations

import os
from pathlib import Path

from consort.core.fsutil import atomic_write_text

KEY = "DATABASE_URL"
MARKER = "# consort:"


def set_database_url(env_file: Path, url: str | None, note: str) -> None:
    """Replace (or remove, when url is None) DATABASE_URL, with a comment saying which branch."""
    lines = env_file.read_text(encoding="utf-8").splitlines() if env_file.exists() else []
    kept = [
        line
        for line in lines
        if not line.startswith(MARKER)
        and line.split("=", 1)[0].strip() not in (KEY, f"export {KEY}")
    ]
    kept.append(f"{MARKER} {note}")
    if url is not None:
        kept.append(f"{KEY}={url}")
    atomic_write_text(env_file, "\n".join(kept) + "\n", mode=0o600)


def read_database_url(env_file: Path) -> str | None:
    if not env_file.exists():
        return None
    for line in env_file.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == KEY:
            return value.strip()
    return None


def is_private(env_file: Path) -> bool:
    return env_file.exists() and (os.stat(env_file).st_mode & 0o077) == 0


def tracked_env_file(checkout: Path, name: str) -> bool:
    """Whether the env file `name` of `checkout` is a file of the user's repository."""
    from consort.adapters.vcs import Git

    return Git.is_repo(checkout) and Git(checkout).tracks(name)


def point_at_branch(checkout: Path, name: str, url: str | None, note: str) -> bool:
    """Write the branch's URL into `checkout`'s env file `name`, unless git tracks that file;
    whether it was written."""
    if tracked_env_file(checkout, name):
        return False
    set_database_url(checkout / name, url, note)
    return True
