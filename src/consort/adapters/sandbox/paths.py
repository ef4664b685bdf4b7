"""Questions about host paths that answer "no" where we may not look (a 0700 home of someone
else's, as a test's unprivileged user meets root's), instead of raising."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def exists(path: Path) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
