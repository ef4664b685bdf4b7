"""The store project the database cheats drive: no template code, the project's own migrate
script, main's database migrated by hand and a feature taken in, so that from there on every
branch database is migrated by Consort."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.helpers import MINI, TDD_AGENT, consort, git, ok


def start_store(
    root: Path, migrate: str, migrations: Mapping[str, str], configure: Callable[[Path], None]
) -> None:
    """`consort init` at `root`, the template's code removed, `migrate` as migrate.py and
    `migrations` in migrations/versions, `configure` writing consort.toml; committed, main's
    database migrated, the feature "Store" taken in."""
    ok(consort("init", str(root), cwd=root.parent))
    for stale in ("tests", "app", "migrations"):
        subprocess.run(["git", "rm", "-rq", "--ignore-unmatch", stale], cwd=root, check=True)
    (root / "migrate.py").write_text(migrate)
    versions = root / "migrations" / "versions"
    versions.mkdir(parents=True, exist_ok=True)
    for name, text in (migrations or {".keep": ""}).items():
        (versions / name).write_text(text)
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "__init__.py").write_text("")
    configure(root)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a store")
    url = ok(consort("db", "url", cwd=root)).strip()
    subprocess.run(
        [sys.executable, "migrate.py"],
        cwd=root,
        check=True,
        env={"DATABASE_URL": url, "PATH": "/usr/bin:/bin"},
    )
    ok(consort("intake", "feature", "--title", "Store", cwd=root, input_text="A store."))


def honest_agents_but_the_driver(driver: list[str]) -> Callable[[Path], None]:
    """A configure for `start_store`: proxy gates, the honest mini agent for every role but the
    driver, which runs `driver`."""
    honest = [sys.executable, str(TDD_AGENT), str(MINI), "honest"]

    def configure(root: Path) -> None:
        (root / "consort.toml").write_text(
            f"""
[test]
command = {json.dumps([sys.executable, "-m", "pytest", "-q"])}
timeout = 120
[migrate]
command = {json.dumps([sys.executable, "migrate.py"])}
[gates]
mode = "proxy"
[agents]
default = "command"
command = {json.dumps(honest)}
[agents.driver]
adapter = "command"
command = {json.dumps(driver)}
"""
        )

    return configure
