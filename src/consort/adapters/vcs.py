"""git through the one subprocess helper: branches, worktrees, commits."""

from __future__ import annotations

from pathlib import Path

from consort.adapters import proc
from consort.core.errors import ConsortError, UsageError

GIT_TIMEOUT_S = 120
CONSORT_IDENTITY = ("-c", "user.name=Consort", "-c", "user.email=consort@localhost")


class Git:
    def __init__(self, root: Path):
        self.root = root

    def run(self, *args: str, check: bool = True) -> proc.Completed:
        return proc.run(["git", *args], cwd=self.root, timeout=GIT_TIMEOUT_S, check=check)

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.strip()

    # ---- repository -------------------------------------------------------------------------

    @staticmethod
    def is_repo(folder: Path) -> bool:
        result = proc.run(["git", "rev-parse", "--git-dir"], cwd=folder, check=False)
        return result.ok

    @staticmethod
    def init(folder: Path, initial_branch: str = "main") -> Git:
        proc.run(["git", "init", "-q", "-b", initial_branch], cwd=folder)
        return Git(folder)

    def toplevel(self) -> Path:
        return Path(self.out("rev-parse", "--show-toplevel"))

    def hooks_dir(self) -> Path:
        path = Path(self.out("rev-parse", "--git-path", "hooks"))
        return path if path.is_absolute() else self.root / path

    def has_commits(self) -> bool:
        return self.run("rev-parse", "--verify", "-q", "HEAD", check=False).ok

    def is_clean(self, *, ignoring: tuple[str, ...] = ()) -> bool:
        """No uncommitted change to tracked files (outside the `ignoring` folders)."""
        excludes = [f":(exclude){path}" for path in ignoring]
        spec = ["--", ".", *excludes] if excludes else []
        return self.out("status", "--porcelain", "--untracked-files=no", *spec) == ""

    # ---- branches ---------------------------------------------------------------------------

    def current_branch(self) -> str | None:
        result = self.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        return result.stdout.strip() or None if result.ok else None

    def branches(self) -> list[str]:
        text = self.out("for-each-ref", "--format=%(refname:short)", "refs/heads/")
        return [line for line in text.splitlines() if line]

    def branch_exists(self, name: str) -> bool:
        return self.run("show-ref", "--verify", "--quiet", f"refs/heads/{name}", check=False).ok

    def check_branch_name(self, name: str) -> None:
        """Refuse a name git itself would refuse, with git's own rules."""
        result = proc.run(["git", "check-ref-format", "--branch", name], cwd=self.root, check=False)
        if not result.ok or name.startswith("-"):
            raise UsageError(
                f"{name!r} is not a valid git branch name",
                fix="see `git help check-ref-format`; e.g. feature/stock-levels",
            )

    def create_branch(self, name: str, start: str) -> None:
        self.run("branch", "--no-track", name, start)

    def delete_branch(self, name: str, *, force: bool) -> None:
        result = self.run("branch", "-D" if force else "-d", name, check=False)
        if not result.ok:
            reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
            raise UsageError(
                f"git refused to delete branch {name!r}: {reason}",
                fix="merge it first, or pass --force to delete unmerged work",
            )

    def switch(self, name: str) -> None:
        result = self.run("switch", name, check=False)
        if not result.ok:
            text = result.stderr.strip()
            raise UsageError(
                f"git could not switch to {name!r}: {text.splitlines()[-1] if text else 'failed'}",
                fix="commit or stash your changes first",
            )

    def as_consort(self, *args: str) -> proc.Completed:
        """A git command that records Consort as its author (commits and merges it makes)."""
        return self.run(*CONSORT_IDENTITY, *args)

    def commit_all(self, message: str) -> str:
        self.run("add", "-A")
        self.as_consort("commit", "-q", "--allow-empty", "-m", message)
        return self.out("rev-parse", "HEAD")


def require_git() -> None:
    try:
        proc.run(["git", "--version"])
    except ConsortError as exc:
        raise UsageError("git is not installed", fix="install git (apt-get install git)") from exc
