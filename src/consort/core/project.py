"""Finding the project and the paths of its private files."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from consort.core.errors import UsageError
from consort.core.layout import STATE_DIR, Layout

if TYPE_CHECKING:
    from consort.core.config import Config

CONFIG_FILE = "consort.toml"
"""The file that makes a folder a Consort project."""


@dataclass(frozen=True)
class Project:
    root: Path

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_FILE

    @cached_property
    def config(self) -> Config:
        # Loaded on first use: commands that only read the ledger need no pydantic.
        from consort.core.config import load_config

        return load_config(self.config_path)

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def layout(self) -> Layout:
        """Every path in the project's state folder."""
        return Layout(self.state_dir)

    @property
    def db_dir(self) -> Path:
        """Private database state: cluster location, secret. Never committed."""
        return self.layout.db

    @property
    def env_file_name(self) -> str:
        """`[env] file`: where the checked-out branch's DATABASE_URL is kept for the app."""
        return self.config.env.file if self.config_path.exists() else ".env"

    @property
    def env_file(self) -> Path:
        return self.root / self.env_file_name


def find_project(start: Path | None = None) -> Project:
    """The nearest folder at or above `start` holding consort.toml.

    Inside a git worktree of the project, the main checkout is the project: worktrees share its
    database and state.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _inside_a_state_folder(folder):
            # A checkout Consort made (a story's, a spike's) is never a project of its own, even
            # with a `.consort/` in it (committed, or planted by an agent): its project is the
            # one whose state folder holds it.
            continue
        if (folder / CONFIG_FILE).is_file() and (folder / STATE_DIR).is_dir():
            return Project(folder)
    main = _main_worktree_of(here)
    if main is not None and (main / CONFIG_FILE).is_file():
        return Project(main)
    raise UsageError(f"no Consort project at or above {here}", fix="run `consort init` first")


def _inside_a_state_folder(folder: Path) -> bool:
    return any(
        above.name == STATE_DIR and (above.parent / CONFIG_FILE).is_file()
        for above in folder.parents
    )


def _main_worktree_of(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        dotgit = candidate / ".git"
        if dotgit.is_file():  # a linked worktree: ".git" is a file pointing into the main repo
            text = dotgit.read_text(encoding="utf-8").strip()
            if text.startswith("gitdir:"):
                gitdir = Path(text.removeprefix("gitdir:").strip())
                # <main>/.git/worktrees/<name> -> <main>
                if gitdir.parent.name == "worktrees":
                    return gitdir.parent.parent.parent
            return None
        if dotgit.is_dir():
            return None
    return None
