"""Git hooks Consort installs, and what they run."""

from __future__ import annotations

import os
import shlex
import sys
from enum import StrEnum
from pathlib import Path

from consort.core.errors import UsageError
from consort.core.project import CONFIG_FILE, Project

HOOK_MARK = "# consort: post-checkout"


def post_checkout_script() -> str:
    python = shlex.quote(sys.executable)
    return f"""#!/bin/sh
{HOOK_MARK}
# Keeps .env's DATABASE_URL on the database of the branch just checked out.
# $3 is 1 for a branch checkout, 0 for a file checkout.
[ "$3" = "1" ] || exit 0
{python} -m consort hook post-checkout "$@" || true
"""


class HookInstall(StrEnum):
    INSTALLED = "installed"
    UNCHANGED = "unchanged"
    FOREIGN = "foreign"  # a hook of the user's is there: left alone


def install_post_checkout(hooks_dir: Path) -> HookInstall:
    """Install (or refresh) the hook, never replacing a hook of the user's."""
    hooks_dir.mkdir(parents=True, exist_ok=True)
    path = hooks_dir / "post-checkout"
    script = post_checkout_script()
    if path.exists():
        current = path.read_text(encoding="utf-8", errors="replace")
        if HOOK_MARK not in current:
            return HookInstall.FOREIGN
        if current == script:
            return HookInstall.UNCHANGED
    from consort.core.fsutil import atomic_write_text

    atomic_write_text(path, script, mode=0o755)
    return HookInstall.INSTALLED


def run_post_checkout(cwd: Path) -> str:
    """Point this checkout's .env at the current branch's database (no server needed)."""
    from consort.adapters.envfile import point_at_branch
    from consort.adapters.paired import PairedBranches
    from consort.adapters.vcs import Git
    from consort.core.project import find_project

    project = find_project(cwd)
    checkout = Git(cwd).toplevel()
    paired = PairedBranches(project)
    branch = Git(checkout).current_branch()
    name = project.env_file_name
    if branch is None:
        point_at_branch(checkout, name, None, "detached HEAD: no branch database")
        return f"detached HEAD: DATABASE_URL removed from {name}"
    try:
        url = paired.url(branch)
    except UsageError as exc:
        point_at_branch(checkout, name, None, f"{branch}: {exc.message}")
        return f"{branch}: {exc.message}"
    if not point_at_branch(checkout, name, url, f"database of branch {branch}"):
        return f"{name} is tracked by git and was left alone (set [env] file in {CONFIG_FILE})"
    return f"DATABASE_URL in {name} now points at the database of {branch}"


def env_is_private(project: Project) -> bool:
    return not project.env_file.exists() or (os.stat(project.env_file).st_mode & 0o077) == 0
