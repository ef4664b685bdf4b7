"""The folder and environment each of the project's commands (test, migrate, deploy) runs with.

A command gets a small environment: a few of Consort's own variables (PATH, HOME, locale), those
of a login shell (SHELL, USER, LOGNAME, SHLVL: no test run is told from a terminal by them),
the run database's `DATABASE_URL`, what its `pass_env` names, and its `env` table, whose values
may name the run database's parts (`{db.host}`, `{db.port}`, `{db.name}`, `{db.user}`,
`{db.password}`, `{db.url}`, `{db.jdbc}`). That is how Consort's throwaway database reaches a
suite that reads `POSTGRES_SERVER` and friends: by environment, never by a file of the user's.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from consort.core.config import JUNIT_PLACEHOLDER, CommandSection

PASS_THROUGH = ("PATH", "HOME", "LANG", "TERM", "TMPDIR", "VIRTUAL_ENV")
# What every login shell gives the programs it starts: a run without them would be told from a
# developer's terminal by their absence (`"SHELL" not in os.environ`). Taken from Consort's own
# environment, or from the user's account where that has none.
LOGIN_PASS_THROUGH = ("SHELL", "USER", "LOGNAME", "SHLVL", "LC_ALL", "LC_CTYPE", "LANGUAGE", "TZ")


@dataclass(frozen=True)
class DbParts:
    """A PostgreSQL login URL taken apart."""

    url: str
    host: str
    port: str
    name: str
    user: str
    password: str

    @classmethod
    def from_url(cls, url: str) -> DbParts:
        parts = urlsplit(url)
        return cls(
            url=url,
            host=parts.hostname or "127.0.0.1",
            port=str(parts.port or 5432),
            name=unquote(parts.path.lstrip("/")),
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
        )

    @property
    def jdbc(self) -> str:
        return (
            f"jdbc:postgresql://{self.host}:{self.port}/{quote(self.name)}"
            f"?user={quote(self.user)}&password={quote(self.password)}"
        )

    def placeholders(self) -> dict[str, str]:
        return {
            "{db.url}": self.url,
            "{db.host}": self.host,
            "{db.port}": self.port,
            "{db.name}": self.name,
            "{db.user}": self.user,
            "{db.password}": self.password,
            "{db.jdbc}": self.jdbc,
        }


def expand(text: str, values: Mapping[str, str]) -> str:
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def login_env() -> dict[str, str]:
    """The variables of a login shell, as Consort's environment has them or the account says."""
    env = {name: os.environ[name] for name in LOGIN_PASS_THROUGH if os.environ.get(name)}
    try:
        account = pwd.getpwuid(os.getuid())
    except KeyError:  # a uid with no account: nothing to say about it
        name, shell = "", "/bin/sh"
    else:
        name, shell = account.pw_name, account.pw_shell or "/bin/sh"
    env.setdefault("SHELL", shell)
    if name:
        env.setdefault("USER", name)
        env.setdefault("LOGNAME", name)
    env.setdefault("SHLVL", "1")
    return env


def base_env(database_url: str) -> dict[str, str]:
    env = login_env()
    env.update({name: os.environ[name] for name in PASS_THROUGH if name in os.environ})
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env["DATABASE_URL"] = database_url
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # keep the working tree exactly as committed
    env["PYTHONNOUSERSITE"] = "1"  # no usercustomize or .pth from outside the tree
    return env


def command_env(
    section: CommandSection, database_url: str, *, junit: str | None = None
) -> dict[str, str]:
    """The environment of one command run against `database_url`."""
    env = base_env(database_url)
    # pass_env cannot bring back what Consort keeps from every run
    blocked = ("PYTEST_", "PYTHONPATH", "CONSORT_")
    for name in section.pass_env:
        if name in os.environ and not name.startswith(blocked):
            env[name] = os.environ[name]
    values = DbParts.from_url(database_url).placeholders()
    if junit is not None:
        values[JUNIT_PLACEHOLDER] = junit
    for name, value in section.env.items():
        env[name] = expand(value, values)
    return env


def table_env(section: CommandSection, database_url: str) -> dict[str, str]:
    """A command's `env` table alone, for `database_url` (a `{junit}` value is left out: only
    Consort's run has a report path)."""
    values = DbParts.from_url(database_url).placeholders()
    return {
        name: expand(value, values)
        for name, value in section.env.items()
        if JUNIT_PLACEHOLDER not in value
    }


def workdir(tree: Path, section: CommandSection) -> Path:
    """The folder a command runs in, inside the export `tree`."""
    return tree / section.cwd if section.cwd else tree
