"""`consort init [DIR]`: a composition of small, re-runnable steps.

Each step checks before it acts, so `init` adopts an existing folder or git repository without
touching its code, and running it twice changes nothing the second time.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from consort.adapters.db.machine import OWNER_FILE
from consort.adapters.envfile import tracked_env_file
from consort.adapters.survey import DB_VARIABLES, Survey
from consort.adapters.vcs import Git, require_git
from consort.core.config import (
    CanaryKind,
    CommandSetup,
    ConfigSetup,
    DbBackendKind,
    RunnerKind,
    config_text,
)
from consort.core.errors import ConsortError, UsageError
from consort.core.fsutil import atomic_write_text
from consort.core.layout import COMMITTED_FOLDERS, IGNORED, LEDGER_FILE, ROLES_DIR, STATE_DIR
from consort.core.project import CONFIG_FILE, Project

TRACKED_ENV_FALLBACK = ".env.local"
# How `init` runs a Node suite so that it writes JUnit XML where `{junit}` says.
NODE_PROFILES: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "vitest": (
        (
            "npx",
            "vitest",
            "run",
            # Vite's default loader bundles the config into node_modules/.vite-temp, which a
            # run (node_modules read-only) cannot write; the runner loader writes nothing.
            "--configLoader=runner",
            "--reporter=default",
            "--reporter=junit",
            "--outputFile.junit={junit}",
        ),
        (),
    ),
    "jest": (
        ("npx", "jest", "--ci", "--reporters=default", "--reporters=jest-junit"),
        (
            ("JEST_JUNIT_OUTPUT_FILE", "{junit}"),
            ("JEST_JUNIT_CLASSNAME", "{filepath}"),
            ("JEST_JUNIT_TITLE", "{title}"),
            # A test file that cannot load is in the report, as Vitest's and pytest's are.
            ("JEST_JUNIT_REPORT_TEST_SUITE_ERRORS", "true"),
        ),
    ),
}
# Go and Maven: the command, where its JUnit XML goes, and the variables of the toolchain a
# run inherits (its caches live under HOME, which every run has). Neither has a canary language.
GO_PROFILE = CommandSetup(
    ("gotestsum", "--junitfile", "{junit}", "--", "./..."),
    comment="writes JUnit XML to {junit}, a testsuite per package",
    pass_env=("GOPATH", "GOMODCACHE", "GOCACHE", "GOFLAGS", "GOPROXY"),
)
MAVEN_PROFILE = CommandSetup(
    ("mvn", "-B", "test"),
    comment="Surefire writes a TEST-*.xml per class to junit_dir",
    pass_env=("JAVA_HOME", "MAVEN_OPTS"),
)
SUREFIRE_REPORTS = "target/surefire-reports"
STATE_FOLDERS = COMMITTED_FOLDERS


@dataclass
class InitReport:
    root: Path
    done: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    next_steps: list[str] = field(default_factory=list)  # what a person does next, in order

    def as_json(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "done": self.done,
            "warnings": self.warnings,
            "next_steps": self.next_steps,
        }


Step = Callable[[Project, InitReport], None]


def step_folder(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except PermissionError as exc:
        raise UsageError(f"cannot create {root}: permission denied") from exc
    if not os.access(root, os.W_OK | os.X_OK):
        raise UsageError(f"{root} is not writable by you")


def step_git(project: Project, report: InitReport) -> None:
    require_git()
    if Git.is_repo(project.root):
        toplevel = Git(project.root).toplevel().resolve()
        if toplevel != project.root.resolve() and any(project.root.iterdir()):
            raise UsageError(
                f"{project.root} is inside the git repository {toplevel}",
                fix=f"run `consort init {toplevel}` to adopt the repository at its top",
            )
        if toplevel == project.root.resolve():
            return
        # A new, empty folder inside another repository becomes a repository of its own.
    Git.init(project.root)
    report.done.append("created a git repository (branch main)")


def step_template(name: str | None) -> Step:
    """Lay down a project scaffold (its consort.toml included) before the other steps."""

    def apply_template(project: Project, report: InitReport) -> None:
        if name is None:
            return
        from consort.templates import apply

        written = apply(name, project.root, project.root.name)
        if written:
            report.done.append(f"laid down the {name} template ({len(written)} files)")

    return apply_template


def step_config(project: Project, report: InitReport, db_binaries: str | None = None) -> None:
    if project.config_path.exists():
        if db_binaries is not None and project.config.db.binaries != db_binaries:
            raise UsageError(
                f"{CONFIG_FILE} exists with [db] binaries = {project.config.db.binaries!r}",
                fix=f"set binaries = {db_binaries!r} in its [db] table before the cluster is made",
            )
        project.config  # noqa: B018 -- validates the existing file, raising a clear message
        return
    from consort.adapters.survey import survey

    found = survey(project.root)
    setup, notes = config_setup(found)
    if db_binaries is None:
        chosen = binaries_for_extensions(project.root)
        if chosen is not None:
            db_binaries, note = chosen
            notes.append(note)
    if db_binaries is not None:
        setup = replace(setup, db_binaries=db_binaries)
    atomic_write_text(project.config_path, config_text(setup))
    report.done.append(f"wrote {CONFIG_FILE}")
    report.done.extend(notes)
    if found.env_settings:
        shown = ", ".join(found.env_settings[:8]) + (", ..." if len(found.env_settings) > 8 else "")
        report.warnings.append(
            f"the tracked .env also sets {shown}: no run reads a .env (runs get their settings "
            "by environment only), so give what the tests and migrations need in [test.env] "
            "and [migrate.env] (and [deploy.env] for the app) in "
            f"{CONFIG_FILE}"
        )
    unprotected = found.unprotected_tests()
    if unprotected:
        report.warnings.append(
            f"{len(unprotected)} test file(s) match no protected glob (e.g. {unprotected[0]}): "
            f"add a glob for them to [build] protected in {CONFIG_FILE}"
        )


def step_config_with(db_binaries: str) -> Step:
    def config_with_binaries(project: Project, report: InitReport) -> None:
        step_config(project, report, db_binaries)

    return config_with_binaries


def config_setup(found: Survey) -> tuple[ConfigSetup, list[str]]:
    """The consort.toml for what the survey found, and one line for the user per finding."""
    notes: list[str] = []
    db_env = tuple(
        (name, DB_VARIABLES[name]) for name in found.db_variables if name != "DATABASE_URL"
    )
    if db_env:
        notes.append(
            "the code reads " + ", ".join(n for n, _ in db_env) + ": [test.env] and "
            "[migrate.env] give them the run database's parts ({db.host}, ...)"
        )
    defaults = ConfigSetup()
    test = CommandSetup(defaults.test.command, found.test_cwd, db_env, defaults.test.comment)
    runner, dependencies = RunnerKind.PYTEST, tuple[str, ...]()
    canary, junit_dir = CanaryKind.AUTO, ""
    if found.node_runner is not None:
        command, env = NODE_PROFILES[found.node_runner]
        test = CommandSetup(command, "", (*env, *db_env), "writes JUnit XML to {junit}")
        runner, dependencies = RunnerKind.JUNIT, ("node_modules",)
        # Written out, so that the canaries' language never depends on the command's words.
        canary = CanaryKind(found.node_runner)
        notes.append(f"the tests run with {found.node_runner}, reporting JUnit XML")
    elif found.build_tool is not None:
        profile = GO_PROFILE if found.build_tool == "go" else MAVEN_PROFILE
        test = replace(profile, cwd=found.test_cwd, env=db_env)
        runner, canary = RunnerKind.JUNIT, CanaryKind.NONE
        if found.build_tool == "maven":
            junit_dir = SUREFIRE_REPORTS
        tool = "gotestsum (go test)" if found.build_tool == "go" else "Maven Surefire"
        notes.append(f"the tests run with {tool}, reporting JUnit XML (no canary: none exists)")
    elif found.test_cwd:
        notes.append(
            f"the tests run from {found.test_cwd}/ ([test] cwd); ids stay repository paths"
        )
    python_of = _venv_python(found.venv)
    if found.venv:
        test = replace(test, command=(python_of(found.test_cwd), *test.command[1:]))
        dependencies = (found.venv,)
        notes.append(
            f"the tests and migrations run on the project's virtual environment {found.venv} "
            "([test] dependencies links it into every run, read-only)"
        )
    migrate = defaults.migrate
    if found.migrate_command is not None:
        command = tuple(found.migrate_command)
        if found.venv and command[0] == "python":
            command = (python_of(found.migrate_cwd), *command[1:])
        migrate = CommandSetup(command, found.migrate_cwd, db_env)
    elif found.node_runner is not None or found.build_tool is not None:
        migrate = CommandSetup((), comment="the command that migrates the run database")
    env_file, env_note = None, ""
    if found.tracked_env:
        env_file = TRACKED_ENV_FALLBACK
        env_note = ".env is tracked by git: Consort never writes it"
        notes.append(
            f".env is tracked by git and stays untouched: the branch's DATABASE_URL goes to "
            f"{env_file} (ignored; load it after .env to use the branch database), and runs get "
            "their database by environment only"
        )
    setup = ConfigSetup(
        test=test,
        runner=runner,
        canary=canary,
        dependencies=dependencies,
        junit_dir=junit_dir,
        migrate=migrate,
        protected=tuple(found.protected),
        env_file=env_file,
        env_file_note=env_note,
    )
    return setup, notes


def _venv_python(venv: str) -> Callable[[str], str]:
    """The interpreter of `venv` (relative to the root) as a command run from `cwd` names it."""

    def python_from(cwd: str) -> str:
        return posixpath.relpath(f"{venv}/bin/python", cwd or ".")

    return python_from


def step_gitignore(project: Project, report: InitReport) -> None:
    path = project.root / ".gitignore"
    if tracked_env_file(project.root, ".gitignore"):
        # The repository's own .gitignore is a file of the user's: never rewritten.
        _ignore_beside(project, report)
        return
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    present = {line.strip() for line in text.splitlines()}
    entries: tuple[str, ...] = (project.env_file_name, *IGNORED)
    if tracked_env_file(project.root, project.env_file_name):
        entries = IGNORED  # the user's own file: ignoring it would only mislead
    missing = [entry for entry in entries if entry not in present]
    if not missing:
        return
    prefix = "" if not text or text.endswith("\n") else "\n"
    block = "# Consort's private files: database state and secrets\n" + "\n".join(missing) + "\n"
    atomic_write_text(path, text + prefix + block)
    report.done.append(f"added {', '.join(missing)} to .gitignore")


def _ignore_beside(project: Project, report: InitReport) -> None:
    """Consort's private files ignored without the user's .gitignore: a `.gitignore` inside
    `.consort/` (Consort's own file), and the env file in git's local exclude list."""
    inner = project.state_dir / ".gitignore"
    text = inner.read_text(encoding="utf-8") if inner.exists() else ""
    present = {line.strip() for line in text.splitlines()}
    wanted = [entry.removeprefix(f"{STATE_DIR}/") for entry in IGNORED]
    missing = [entry for entry in wanted if entry not in present]
    if missing:
        inner.parent.mkdir(parents=True, exist_ok=True)
        block = "# Consort's private files: database state, turns, run logs\n"
        atomic_write_text(inner, text + block + "\n".join(missing) + "\n")
        report.done.append(
            f"wrote {STATE_DIR}/.gitignore (your .gitignore is tracked and stays as it is)"
        )
    name = project.env_file_name
    if tracked_env_file(project.root, name):
        return
    git = Git(project.root)
    exclude = Path(git.out("rev-parse", "--git-path", "info/exclude"))
    exclude = exclude if exclude.is_absolute() else project.root / exclude
    current = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if f"/{name}" in {line.strip() for line in current.splitlines()}:
        return
    exclude.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not current or current.endswith("\n") else "\n"
    atomic_write_text(exclude, f"{current}{prefix}# Consort: the branch's login\n/{name}\n")
    report.done.append(f"{name} is ignored through git's local exclude list ({exclude.name})")


def step_state_dir(project: Project, report: InitReport) -> None:
    created = not project.state_dir.is_dir()
    for folder in STATE_FOLDERS:
        (project.state_dir / folder).mkdir(parents=True, exist_ok=True)
    if created:
        report.done.append(f"created {STATE_DIR}/ ({', '.join(STATE_FOLDERS)})")


def step_role_prompts(project: Project, report: InitReport) -> None:
    """Copy the default role prompts into the project, where they can be edited."""
    from consort.core.vocabulary import Role
    from consort.roles import override_path, packaged_prompt

    written = []
    for role in Role:
        path = override_path(project, role)
        if not path.exists():
            atomic_write_text(path, packaged_prompt(role))
            written.append(role.value)
    if written:
        report.done.append(
            f"wrote the role prompts to {STATE_DIR}/{ROLES_DIR}/ (edit them to taste)"
        )


def step_claude_files(project: Project, report: InitReport) -> None:
    """Claude Code's role agents and /plan /design /build /deploy commands, in .claude/."""
    from consort.adapters.agents.claude_files import init_lines

    done, warnings = init_lines(project)
    report.done.extend(done)
    report.warnings.extend(warnings)


def step_mcp_server(project: Project, report: InitReport) -> None:
    """`consort mcp` in Claude Code's .mcp.json, next to the agent files."""
    from consort.app.mcp_config import register_for_claude

    done, warnings = register_for_claude(project)
    report.done.extend(done)
    report.warnings.extend(warnings)


def step_ledger(project: Project, report: InitReport) -> None:
    from consort import __version__
    from consort.core.ledger import Actor, Ledger, ledger_path
    from consort.core.ledger.events import ProjectInitialised

    path = ledger_path(project.state_dir)
    if path.exists():
        return
    Ledger.open_for_writing(path).record(
        ProjectInitialised(consort=__version__), Actor.HUMAN, "project"
    )
    report.done.append(f"started the ledger ({STATE_DIR}/{LEDGER_FILE})")


def step_database(project: Project, report: InitReport) -> None:
    if project.config.db.backend is DbBackendKind.EMBEDDED:
        _embedded_cluster(project, report)
    from consort.adapters.paired import PairedBranches

    paired = PairedBranches(project)
    paired.backend.ensure_running()
    branch = paired.git.current_branch() or "main"
    names = paired.names(branch)
    if paired.dbs.get(names.database) is None:
        paired.create_root(branch)
        report.done.append(f"created database {names.database!r} for branch {branch!r}")
    paired.refresh_env(branch)


def _embedded_cluster(project: Project, report: InitReport) -> None:
    from consort.adapters.db.account import reachable_binaries, server_account
    from consort.adapters.db.backend import CLUSTER_FILE, ClusterRecord
    from consort.adapters.db.binaries import binaries_for
    from consort.adapters.db.cluster import SUPERUSER, LocalCluster, free_port
    from consort.adapters.db.secret import load_or_create_secret, password_for

    record_path = project.db_dir / CLUSTER_FILE
    if record_path.exists():
        return
    secret = load_or_create_secret(project.db_dir)
    account = server_account()
    binaries = reachable_binaries(binaries_for(project.config.db.binaries), account)
    cluster = LocalCluster(account.cluster_dir(project.root), free_port(), binaries, account)
    if not cluster.exists():
        method = cluster.create(password_for(secret, SUPERUSER))
        who = f"as user {account.user!r}" if account.user else "as you"
        report.done.append(
            f"created the embedded PostgreSQL {binaries.version()} cluster in {cluster.home} "
            f"(runs {who}; database copies: {method.value})"
        )
    # Who owns a cluster outside the project: `consort doctor` finds the orphans by it.
    atomic_write_text(cluster.home / OWNER_FILE, f"{project.root}\n")
    made_with = project.config.db.binaries
    ClusterRecord(str(cluster.home), cluster.port, account.user, made_with).save(record_path)


def step_extensions(project: Project, report: InitReport) -> None:
    """Say now, not at the first migration, when the migrations need an extension the
    cluster's PostgreSQL does not ship."""
    missing = extensions_missing(project)
    if missing:
        from consort.adapters.db.extensions import fix_for

        where = ", ".join(f"{name} ({path})" for name, path in missing.items())
        report.warnings.append(f"the migrations create {where}; {fix_for(missing)}")


def binaries_for_extensions(root: Path) -> tuple[str, str] | None:
    """`[db] binaries = "system"` and why, when the migrations create an extension the embedded
    wheel lacks and the machine's own PostgreSQL (15 or later) ships every such one; None
    otherwise (the embedded default stands, and `step_extensions` names what is missing)."""
    from consort.adapters.db.binaries import EMBEDDED, SYSTEM, binaries_for
    from consort.adapters.db.extensions import created_extensions, shipped_extensions
    from consort.adapters.survey import repository_files

    wanted = created_extensions(root, repository_files(root))
    if not wanted:
        return None
    try:
        lacking = set(wanted) - shipped_extensions(binaries_for(EMBEDDED))
        if not lacking:
            return None
        system = binaries_for(SYSTEM)
    except ConsortError:
        return None
    if lacking - shipped_extensions(system):
        return None
    names = ", ".join(sorted(lacking))
    return SYSTEM, (
        f"the migrations create {names}, which the embedded PostgreSQL lacks: the cluster runs "
        f"on the machine's own PostgreSQL {system.version()} ({system.bindir}), [db] binaries = "
        f'"{SYSTEM}" (`consort init --db-binaries {EMBEDDED}` keeps the embedded one)'
    )


def extensions_missing(project: Project) -> dict[str, str]:
    """Extensions the migrations create that the embedded cluster's binaries lack."""
    if project.config.db.backend is not DbBackendKind.EMBEDDED:
        return {}
    from consort.adapters.db.binaries import binaries_for
    from consort.adapters.db.extensions import created_extensions, shipped_extensions
    from consort.adapters.survey import repository_files

    wanted = created_extensions(project.root, repository_files(project.root))
    if not wanted:
        return {}
    shipped = shipped_extensions(binaries_for(project.config.db.binaries))
    return {name: path for name, path in wanted.items() if name not in shipped}


def step_initial_commit(project: Project, report: InitReport) -> None:
    git = Git(project.root)
    if git.has_commits():
        report.warnings.append(
            f"existing repository: review and commit {CONFIG_FILE} and .gitignore (or "
            f"{STATE_DIR}/.gitignore) yourself"
        )
        return
    git.run("add", "-A", "--", ".", ":(exclude).consort")
    git.as_consort(
        "commit",
        "-q",
        "-m",
        "Set up Consort",
    )
    report.done.append("made the first commit")


def step_hooks(project: Project, report: InitReport) -> None:
    from consort.app.hook import HookInstall, install_post_checkout

    outcome = install_post_checkout(Git(project.root).hooks_dir())
    if outcome is HookInstall.INSTALLED:
        report.done.append(
            f"installed the post-checkout hook (keeps {project.env_file_name}'s DATABASE_URL on "
            "the branch)"
        )
    elif outcome is HookInstall.FOREIGN:
        report.warnings.append(
            "a post-checkout hook of yours exists and was left alone: add "
            '`python -m consort hook post-checkout "$@"` to it'
        )


STEPS: tuple[Step, ...] = (
    step_git,
    step_config,
    step_gitignore,
    step_state_dir,
    step_role_prompts,
    step_claude_files,
    step_mcp_server,
    step_ledger,
    step_initial_commit,
    step_database,
    step_extensions,
    step_hooks,
)


def init(
    directory: Path,
    steps: tuple[Step, ...] = STEPS,
    *,
    template: str | None = None,
    db_binaries: str | None = None,
) -> InitReport:
    root = directory.resolve()
    step_folder(root)
    project = Project(root)
    report = InitReport(root)
    if db_binaries is not None:
        steps = tuple(step_config_with(db_binaries) if s is step_config else s for s in steps)
    chosen = steps
    if template is not None:
        # after git (the folder is a repository), before the default consort.toml is written
        chosen = (steps[0], step_template(template), *steps[1:])
    for step in chosen:
        step(project, report)
    report.next_steps = next_steps(project)
    return report


def _has_features(project: Project) -> bool:
    from consort.core.ledger import EventType, Ledger, ledger_path

    path = ledger_path(project.state_dir)
    try:
        return path.exists() and any(
            event.type is EventType.FEATURE_CREATED for event in Ledger(path).read()
        )
    except ConsortError:
        return False


def next_steps(project: Project) -> list[str]:
    """The useful next steps of a project just set up: choose the agents (unless the
    configuration already does), then describe the first feature (unless one is recorded)."""
    from consort.adapters.agents.config import parse_agents

    steps = []
    try:
        agents = parse_agents(project.config.agents)
        chosen = agents.shared.default is not None or any(
            table.adapter is not None for table in agents.roles.values()
        )
    except ConsortError:
        chosen = False
    if not chosen:
        steps.append(
            f'choose who plays the roles: in {CONFIG_FILE}, set [agents] default = "claude" '
            "(or codex, or a command of your own; `consort doctor` shows what is installed)"
        )
    if not _has_features(project):
        steps.append("describe what to build: consort intake feature --file request.md")
    else:
        steps.append("run the lanes: consort drive")
    return steps
