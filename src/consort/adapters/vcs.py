"""git through the one subprocess helper: branches, worktrees, commits.

Every git command Consort runs is sealed against the repository's own machinery, which an agent
may have planted: no hooks (a `pre-commit` or `post-merge` would run inside Consort's commits and
merges), no fsmonitor (a program git would ask which files changed), no attributes file outside
the tree, and no variable that points git at another repository or configuration. Content
filters and index flags are handled where content matters: Consort reads commits from git
objects and compares bytes (see `consort.adapters.tdd.export`), never a checkout's view.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from consort.adapters import proc
from consort.core.errors import ConsortError, UsageError

GIT_TIMEOUT_S = 120
CONSORT_IDENTITY = ("-c", "user.name=Consort", "-c", "user.email=consort@localhost")
SEALED_OPTIONS = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.attributesFile=/dev/null",
    "-c",
    "core.splitIndex=false",
    "-c",
    "core.untrackedCache=false",
)


# Variables that would point git at another repository, index or configuration.
REDIRECTING_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_ATTR_SOURCE",
    "GIT_EXTERNAL_DIFF",
)


def sealed_env() -> dict[str, str]:
    """The environment of Consort's git commands: none of the variables that point git
    elsewhere (set by whoever started Consort), and no prompts."""
    env = {k: v for k, v in os.environ.items() if k not in REDIRECTING_VARIABLES}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def sealed_git(
    cwd: Path | str,
    *args: str,
    check: bool = True,
    extra_env: dict[str, str] | None = None,
    input_text: str | None = None,
    timeout: float = GIT_TIMEOUT_S,
) -> proc.Completed:
    """One git command with hooks, fsmonitor and outside configuration off."""
    env = sealed_env()
    env.update(extra_env or {})
    return proc.run(
        ["git", *SEALED_OPTIONS, *args],
        cwd=cwd,
        env=env,
        input_text=input_text,
        timeout=timeout,
        check=check,
    )


class Git:
    def __init__(self, root: Path):
        self.root = root

    def run(self, *args: str, check: bool = True) -> proc.Completed:
        return sealed_git(self.root, *args, check=check)

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
        """Where the person's git runs hooks from (Consort installs its post-checkout there);
        asked without Consort's own hooks-off option, which would answer /dev/null."""
        answer = proc.run(["git", "rev-parse", "--git-path", "hooks"], cwd=self.root)
        path = Path(answer.stdout.strip())
        return path if path.is_absolute() else self.root / path

    def has_commits(self) -> bool:
        return self.run("rev-parse", "--verify", "-q", "HEAD", check=False).ok

    def is_clean(self, *, ignoring: tuple[str, ...] = ()) -> bool:
        """No uncommitted change to tracked files (outside the `ignoring` folders)."""
        excludes = [f":(exclude){path}" for path in ignoring]
        spec = ["--", ".", *excludes] if excludes else []
        return self.out("status", "--porcelain", "--untracked-files=no", *spec) == ""

    # ---- branches ---------------------------------------------------------------------------

    def tracks(self, path: str) -> bool:
        """Whether `path` (relative to the checkout) is in git's index or HEAD."""
        if self.run("ls-files", "--error-unmatch", "--", path, check=False).returncode == 0:
            return True
        return self.run("cat-file", "-e", f"HEAD:{path}", check=False).returncode == 0

    def current_branch(self) -> str | None:
        result = self.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        return result.stdout.strip() or None if result.ok else None

    def branches(self) -> list[str]:
        text = self.out("for-each-ref", "--format=%(refname:short)", "refs/heads/")
        return [line for line in text.splitlines() if line]

    def branches_and_current(self) -> tuple[list[str], str | None]:
        """Every local branch and the checked-out one, in one call of git (a detached HEAD, or
        a branch with no commit yet, is asked separately)."""
        # Not `out`: it strips the first line's mark, a space when that branch is not checked out.
        text = self.run("for-each-ref", "--format=%(HEAD)%(refname:short)", "refs/heads/").stdout
        names, current = [], None
        for line in text.splitlines():
            if len(line) < 2:
                continue
            names.append(line[1:])
            if line[0] == "*":
                current = line[1:]
        return names, current if current is not None else self.current_branch()

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
        """Commit the working tree's bytes as they are on disk (see `commit_bytes`)."""
        commit = commit_bytes(self.root, message)
        if commit is None:
            raise ConsortError("nothing was committed")
        return commit


def require_git() -> None:
    try:
        proc.run(["git", "--version"])
    except ConsortError as exc:
        raise UsageError("git is not installed", fix="install git (apt-get install git)") from exc


# ---- git objects, read and written by Consort itself ----------------------------------------

LINK_MODE = "120000"
GITLINK_MODE = "160000"
EXEC_MODE = "100755"
FILE_MODE = "100644"


@dataclass(frozen=True)
class TreeEntry:
    """One file of a commit, as git's objects hold it."""

    path: str
    mode: str
    sha: str

    @property
    def is_link(self) -> bool:
        return self.mode == LINK_MODE

    @property
    def is_gitlink(self) -> bool:
        return self.mode == GITLINK_MODE


def tree_entries(repo: Path, commit: str) -> dict[str, TreeEntry]:
    """path -> entry for every file of `commit` (recursively), from the object database."""
    listing = sealed_git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
    entries = {}
    for record in listing.split("\0"):
        if not record:
            continue
        meta, path = record.split("\t", 1)
        mode, _kind, sha = meta.split()
        entries[path] = TreeEntry(path, mode, sha)
    return entries


def read_blobs(repo: Path, shas: Iterable[str]) -> dict[str, bytes]:
    """sha -> content of each blob, read in one `git cat-file --batch` (no filters apply)."""
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    raw = proc.run_binary(
        ["git", *SEALED_OPTIONS, "cat-file", "--batch"],
        cwd=repo,
        env=sealed_env(),
        input_bytes=("\n".join(wanted) + "\n").encode(),
        timeout=GIT_TIMEOUT_S,
    )
    blobs: dict[str, bytes] = {}
    at = 0
    while at < len(raw):
        end = raw.index(b"\n", at)
        header = raw[at:end].decode().split()
        if len(header) != 3:
            raise ConsortError(f"git cat-file: unexpected answer {raw[at:end]!r}")
        sha, size = header[0], int(header[2])
        blobs[sha] = raw[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return blobs


def commit_bytes(worktree: Path, message: str, *, allow_empty: bool = True) -> str | None:
    """Commit exactly the bytes on disk; return the new HEAD (None: nothing changed and
    `allow_empty` is false).

    `git add` would run the repository's clean filters and honour index flags
    (`assume-unchanged`, `skip-worktree`) that hide a changed file; so Consort builds the tree
    itself: every file git does not ignore, hashed with `--no-filters` into a fresh index that
    carries no flags, then `commit-tree` and a checked `update-ref`.
    """
    import tempfile

    # HEAD and its tree in one process; both fail where HEAD is unborn.
    asked = sealed_git(worktree, "rev-parse", "HEAD", "HEAD^{tree}", check=False)
    head, head_tree = asked.stdout.split() if asked.ok else ("", "")
    with tempfile.TemporaryDirectory(prefix="consort-index-") as scratch:
        index_env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        listed = sealed_git(
            worktree, "ls-files", "-z", "--others", "--exclude-standard", extra_env=index_env
        ).stdout
        paths = sorted({p for p in listed.split("\0") if p} | _tracked_present(worktree, head))
        records = _index_records(worktree, paths)
        sealed_git(
            worktree,
            "update-index",
            "-z",
            "--add",
            "--index-info",
            extra_env=index_env,
            input_text="".join(records),
        )
        tree = sealed_git(worktree, "write-tree", extra_env=index_env).stdout.strip()
    unchanged = head_tree == tree
    if unchanged and not allow_empty:
        return None
    parents = ["-p", head] if head else []
    commit = sealed_git(
        worktree,
        *CONSORT_IDENTITY,
        "commit-tree",
        tree,
        *parents,
        "-m",
        message,
    ).stdout.strip()
    sealed_git(worktree, "update-ref", "-m", f"consort: {message[:60]}", "HEAD", commit, head)
    # The checkout's own index follows HEAD again (its stale flags and entries are dropped).
    sealed_git(worktree, "read-tree", "HEAD")
    return commit


def _tracked_present(worktree: Path, head: str) -> set[str]:
    """Files of HEAD that are still on disk: a tracked file stays tracked even if ignored."""
    if not head:
        return set()
    return {
        path
        for path, entry in tree_entries(worktree, head).items()
        if not entry.is_gitlink and os.path.lexists(worktree / path)
    }


def _beyond_a_link(worktree: Path, path: str, folders: dict[str, bool]) -> bool:
    """Whether a folder on the way to `path` is not a real folder of the tree (a link, say): a
    file reached through a link to a folder elsewhere (one a sandbox hides, beside the project
    secret) is that folder's, not the tree's, and git records the link alone."""
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        if folder not in folders:
            try:
                folders[folder] = stat.S_ISDIR((worktree / folder).lstat().st_mode)
            except OSError:
                folders[folder] = False
        if not folders[folder]:
            return True
    return False


def _index_records(worktree: Path, paths: list[str]) -> list[str]:
    files: list[str] = []
    records: list[str] = []
    folders: dict[str, bool] = {}
    for path in paths:
        if _beyond_a_link(worktree, path, folders):
            continue
        full = worktree / path
        info = full.lstat()
        if stat.S_ISLNK(info.st_mode):
            target = os.readlink(full)
            sha = sealed_git(
                worktree, "hash-object", "-w", "--no-filters", "--stdin", input_text=target
            ).stdout.strip()
            records.append(f"{LINK_MODE} {sha}\t{path}\0")
        elif stat.S_ISREG(info.st_mode):
            files.append(path)
    if files:
        shas = sealed_git(
            worktree,
            "hash-object",
            "-w",
            "--no-filters",
            "--stdin-paths",
            input_text="\n".join(files) + "\n",
        ).stdout.split()
        for path, sha in zip(files, shas, strict=True):
            executable = os.access(worktree / path, os.X_OK)
            records.append(f"{EXEC_MODE if executable else FILE_MODE} {sha}\t{path}\0")
    return records
