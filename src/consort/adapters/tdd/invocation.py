"""How the test command is invoked, by runner (`[test] runner`).

* **pytest** (the default): Consort adds pytest's options itself: the config file it chose, the
  root and conftest boundary, its canary plugin, and a JUnit report written into a pipe only
  Consort reads.
* **junit**: any runner that writes JUnit XML (Vitest, Jest with jest-junit, gotestsum, Maven
  Surefire...). Nothing is appended to the command; `{junit}` in it (or in `[test.env]`) becomes
  the path of a file in a private folder the run may write, read once the run has ended.
  Consort's canaries are a test file in the runner's language (`[test] canary`, else told from
  the command: Vitest or Jest) written into the export; a runner with none runs without.
  A runner that writes a folder of reports, one per test class (Maven Surefire), names it with
  `[test] junit_dir` instead: a folder of the run's export, emptied before the run (so no
  committed or earlier report is read as this run's), its `TEST-*.xml` files read as one.

Either way, test ids come out relative to the repository root: a suite run from `backend/`
reports `backend/tests/test_x.py::test_y`, as a plan names it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from consort.adapters.tdd.canary import junit_canary_kind
from consort.adapters.tdd.junit import merged_reports
from consort.adapters.tdd.runenv import command_env
from consort.adapters.tdd.testconfig import runner_arguments
from consort.core.config import JUNIT_PLACEHOLDER, CanaryKind, RunnerKind, TestSection
from consort.core.errors import UsageError

REPORT_NAME = "junit.xml"


@dataclass(frozen=True)
class TestInvocation:
    argv: list[str]
    env: dict[str, str]
    runner: RunnerKind
    pipe: bool  # the report arrives through proc's side channel
    canaries: bool  # Consort's canaries take part (pytest's plugin, or a junit canary file)
    plugins: Path  # where the canary plugin is written (pytest)
    id_prefix: str  # prepended to every test id: the command's folder in the repository
    writable: list[Path] = field(default_factory=list)
    report: Path | None = None  # where a junit runner writes its report
    canary_kind: CanaryKind = CanaryKind.AUTO  # a junit runner's canary language (AUTO: pytest)
    report_dir: Path | None = None  # where a runner writes one report per test class

    def read_report(self) -> bytes:
        if self.report_dir is not None:
            return merged_reports(self.report_dir)
        if self.report is None:
            return b""
        try:
            return self.report.read_bytes()
        except OSError:
            return b""


def test_invocation(
    section: TestSection, database_url: str, folder: Path, private: Path, canary_module: str
) -> TestInvocation:
    """The test process's argv and environment, for a run in `folder` (inside the export),
    with Consort's private files under `private`."""
    prefix = f"{section.cwd}/" if section.cwd else ""
    plugins = private / "plugins"
    if section.runner is RunnerKind.JUNIT:
        reports = private / "report"
        reports.mkdir(parents=True, exist_ok=True)
        report = reports / REPORT_NAME
        argv = [part.replace(JUNIT_PLACEHOLDER, str(report)) for part in section.command]
        kind = junit_canary_kind(section.canary, section.command)
        report_dir = _emptied(folder, section.junit_dir) if section.junit_dir else None
        return TestInvocation(
            argv=argv,
            env=command_env(section, database_url, junit=str(report)),
            runner=section.runner,
            pipe=False,
            canaries=kind is not CanaryKind.NONE,
            canary_kind=kind,
            plugins=plugins,
            id_prefix=prefix,
            writable=[reports],
            report=report,
            report_dir=report_dir,
        )
    env = command_env(section, database_url)
    env["PYTHONPATH"] = str(plugins)
    return TestInvocation(
        argv=[
            *section.command,
            *runner_arguments(folder, private / "pytest.ini"),
            *pytest_options(canary_module),
            # after the canary plugin: it takes its secret before any other plugin is loaded
            *plugin_options(section.plugins),
        ],
        env=env,
        runner=section.runner,
        pipe=True,
        canaries=True,
        plugins=plugins,
        id_prefix=prefix,
    )


def _emptied(folder: Path, junit_dir: str) -> Path:
    """`junit_dir` under `folder`, with nothing in it: a report found there after the run is
    this run's. A committed symbolic link on the way is refused, never followed: emptying the
    folder must not reach outside the export."""
    target = folder
    for part in Path(junit_dir).parts:
        target = target / part
        if target.is_symlink():
            raise UsageError(
                f"[test] junit_dir {junit_dir!r} passes through a symbolic link ({part})",
                fix="name a real folder of the run, e.g. target/surefire-reports",
            )
    if target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    return target


def plugin_options(plugins: list[str] | None) -> list[str]:
    """pytest's plugins as `[test] plugins` lists them: None leaves pytest to load every
    installed one; a list loads those alone, without the look through every installed
    distribution's entry points that autoloading costs each run."""
    if plugins is None:
        return []
    return ["--disable-plugin-autoload", *(option for name in plugins for option in ("-p", name))]


def pytest_options(canary_module: str) -> list[str]:
    """What Consort appends to a pytest command after its config options."""
    return [
        "--junitxml={side_channel}",
        "-o",
        "junit_family=xunit1",
        "-p",
        "no:cacheprovider",
        "-p",
        canary_module,
        # A test module that cannot be imported must not stop the others from running.
        "--continue-on-collection-errors",
    ]
