"""Canaries: two tests of Consort's own in every run, so a forged report shows.

Each run gets a fresh random name and nonce. For pytest, a plugin written to a private folder
outside the tree and loaded with `-p` adds two tests to whatever the project's suite collects;
for a `junit` runner (Vitest, Jest), Consort writes a test file in the runner's language into the
export, beside the suite's first test file so the runner's own include patterns find it. Either
way one test must pass and one must fail with the nonce in its message. A report in which the
failing canary passed, lost its nonce, or either canary is missing was not written by the run as
it happened (a report rewritten afterwards, a reporter that says every test passed, a runner
patched from inside, a suite that never ran): the attempt fails with a violation. The canaries
are then left out of the report Consort reads, and their outcomes are stored with the run's
evidence.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from consort.adapters.proc import SECRET_INPUT_VAR
from consort.adapters.tdd.junit import CaseResult, JUnitReport, Outcome
from consort.core.config import CanaryKind
from consort.core.seal import SealRule, SealViolation

PLUGIN_TEMPLATE = '''\
"""Consort's canaries for one run; generated, never part of the project.

The canaries' name and nonce are not in this file: they are read, at import (before any module
of the project's is), from a pipe that holds them once."""
import atexit
import gc
import os

import pytest

# Registered before any module of the project's is imported, so it runs after every exit
# handler of theirs, once the report is written and the exit status set: the interpreter's own
# teardown then leaves alone the objects the imports made (a web framework's and an ORM's
# classes: a third of the process's CPU time went into collecting them again, module by module,
# just before exit).
atexit.register(gc.freeze)

# The project's imports and the suite's collection make hundreds of thousands of objects that
# live as long as the process (a web framework's and an ORM's classes), and the collector would
# walk them again and again as they are made, then at every full collection during the tests
# and in pytest's own clean-up: about a fifth of a small suite's CPU time. It is paused until
# the suite is collected (a threshold no project sets, so one that sets its own keeps it), what
# exists then is frozen, and the pause ends; the heap is thawed again once pytest has cleaned up,
# so the project's exit handlers meet the collector as it always is. Objects made by a test are
# collected as ever.
_THRESHOLDS = gc.get_threshold()
_PAUSED = (1_000_000_007, *_THRESHOLDS[1:])
gc.set_threshold(*_PAUSED)


_FROZEN = []


def _thaw():
    if _FROZEN:
        gc.unfreeze()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # clean-ups run last-added first: added before any other plugin's, this one runs after theirs
    config.add_cleanup(_thaw)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    if gc.get_threshold() == _PAUSED:
        gc.freeze()
        _FROZEN.append(True)
        gc.set_threshold(*_THRESHOLDS)


def _secret():
    fd = int(os.environ.pop("{variable}"))
    with os.fdopen(fd, "rb") as pipe:
        name, nonce = pipe.read().decode().split()
    return name, nonce


_NAME, _NONCE = _secret()
# PYTHONPATH named this folder so that pytest could import this plugin; a run sets it for
# nothing else (the project's own is never passed on), and code that read it would tell the run
# from anywhere else. Python read it at start-up: the test process needs it no more.
os.environ.pop("PYTHONPATH", None)


def _passes():
    assert _NONCE


def _fails():
    assert False, _NONCE


class _CanaryItem(pytest.Function):
    pass


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    for label, function in (("passes", _passes), ("fails", _fails)):
        items.append(
            _CanaryItem.from_parent(
                session, name="test_" + _NAME + "_" + label, callobj=function
            )
        )
'''


# The canary file for a junit runner. Jest's version uses its globals only (no import, no
# require), so it loads as CommonJS and as an ES module alike; `@ts-nocheck` lets it pass a
# TypeScript suite's type check whatever types the project has installed.
JS_TEMPLATES = {
    CanaryKind.VITEST: """\
// @ts-nocheck
// Consort's canaries for one run; generated, never part of the project.
import {{ test }} from "vitest";

test("{passing}", () => {{}});

test("{failing}", () => {{
  throw new Error("{nonce}");
}});
""",
    CanaryKind.JEST: """\
// @ts-nocheck
// Consort's canaries for one run; generated, never part of the project.
test("{passing}", () => {{}});

test("{failing}", () => {{
  throw new Error("{nonce}");
}});
""",
}
JS_EXTENSIONS = r"(ts|tsx|js|jsx|mjs|cjs|mts|cts)"
JS_TEST = re.compile(rf"^(?P<stem>.+?)(?P<suffix>\.(test|spec)\.{JS_EXTENSIONS})$")
JS_SOURCE = re.compile(rf"^.+\.{JS_EXTENSIONS}$")
SKIPPED_PARTS = frozenset({"node_modules", ".git", ".consort"})


@dataclass(frozen=True)
class Canaries:
    name: str  # random identifier, part of both test names
    nonce: str
    label: str = ""  # random identifier of the pytest plugin's module, which tells neither

    @property
    def module(self) -> str:
        return f"consort_canary_{self.label or self.name}"

    @property
    def secret(self) -> bytes:
        """What the pytest plugin reads from its pipe: the name and the nonce."""
        return f"{self.name} {self.nonce}\n".encode()

    @property
    def passing_test(self) -> str:
        return f"test_{self.name}_passes"

    @property
    def failing_test(self) -> str:
        return f"test_{self.name}_fails"

    def write_plugin(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.module}.py"
        path.write_text(PLUGIN_TEMPLATE.format(variable=SECRET_INPUT_VAR), encoding="utf-8")
        return path

    def write_test_file(self, tree: Path, site: str, kind: CanaryKind) -> Path:
        """Write the junit runner's canary file at `site` (relative to `tree`)."""
        path = tree / site
        path.parent.mkdir(parents=True, exist_ok=True)
        text = JS_TEMPLATES[kind].format(
            passing=self.passing_test, failing=self.failing_test, nonce=self.nonce
        )
        path.write_text(text, encoding="utf-8")
        return path

    def site(self, paths: Iterable[str], folder: str) -> str:
        """Where the canary file goes, relative to the repository root: beside the first test
        file under `folder` (the runner's cwd), with that file's suffix (`.test.ts`, or the
        extension of a file in `__tests__/`), so that the runner's include patterns match it;
        with none, `<folder>/<name>.test.js`, which Vitest's and Jest's defaults find."""
        stem = f"consort_canary_{self.name}"
        base = PurePosixPath(folder) if folder else PurePosixPath()
        for path in sorted(paths):
            pure = PurePosixPath(path)
            if folder and base not in pure.parents:
                continue
            if SKIPPED_PARTS.intersection(pure.parts):
                continue
            named = JS_TEST.match(pure.name)
            if named:
                return str(pure.parent / f"{stem}{named['suffix']}")
            if pure.parent.name == "__tests__" and JS_SOURCE.match(pure.name):
                return str(pure.parent / f"{stem}{pure.suffix}")
        return str(base / f"{stem}.test.js")


def junit_canary_kind(kind: CanaryKind, command: Iterable[str]) -> CanaryKind:
    """The canary language of a junit runner: as configured, or told from the command's words
    (`npx vitest run ...`, `node_modules/.bin/jest`); NONE when the command names neither.
    Only consort.toml is read, never a file an agent may write (package.json's scripts)."""
    if kind is not CanaryKind.AUTO:
        return kind
    words = [PurePosixPath(part).name.lower() for part in command]
    if any("vitest" in word for word in words):
        return CanaryKind.VITEST
    if any(re.search(r"\bjest\b", word) for word in words):
        return CanaryKind.JEST
    return CanaryKind.NONE


def fresh_canaries() -> Canaries:
    return Canaries(
        name=secrets.token_hex(6), nonce=secrets.token_hex(16), label=secrets.token_hex(6)
    )


@dataclass(frozen=True)
class CanaryCheck:
    passing: str  # the outcome of each canary, "missing" when absent
    failing: str
    nonce_seen: bool
    violations: tuple[SealViolation, ...]
    report: JUnitReport  # the report without the canaries

    def as_data(self) -> dict[str, Any]:
        return {
            "passing": self.passing,
            "failing": self.failing,
            "nonce_seen": self.nonce_seen,
            "holds": not self.violations,
        }


def check_canaries(
    report: JUnitReport, canaries: Canaries, *, raised_counts_as_failed: bool = False
) -> CanaryCheck:
    """Split the canaries off `report` and say whether they came out as they must.

    `raised_counts_as_failed`: a junit runner's failing canary throws an Error, which reads as
    an error rather than a failed assertion; either is a failure there, a pass never is."""
    passing: CaseResult | None = None
    failing: CaseResult | None = None
    rest = {}
    for node, case in report.cases.items():
        leaf = node.rsplit("::", 1)[-1]
        if leaf == canaries.passing_test:
            passing = case
        elif leaf == canaries.failing_test:
            failing = case
        else:
            rest[node] = case
    problems = []
    if passing is None or failing is None:
        missing = [
            t
            for t, c in ((canaries.passing_test, passing), (canaries.failing_test, failing))
            if c is None
        ]
        problems.append(f"the report lacks Consort's canary test(s) {', '.join(missing)}")
    if passing is not None and passing.outcome is not Outcome.PASSED:
        problems.append(f"Consort's passing canary came out {passing.outcome.value}")
    nonce_seen = failing is not None and canaries.nonce in failing.message
    if failing is not None:
        failed = (Outcome.FAILED, Outcome.ERROR) if raised_counts_as_failed else (Outcome.FAILED,)
        if failing.outcome not in failed:
            problems.append(f"Consort's failing canary came out {failing.outcome.value}")
        elif not nonce_seen:
            problems.append("Consort's failing canary lost its nonce: the report was rewritten")
    violations = tuple(
        SealViolation(SealRule.CANARY_FORGED, "", f"{p}: the report is forged") for p in problems
    )
    cleaned = JUnitReport(rest, report.sha256, report.collection_errors)
    return CanaryCheck(
        passing=passing.outcome.value if passing else "missing",
        failing=failing.outcome.value if failing else "missing",
        nonce_seen=nonce_seen,
        violations=violations,
        report=cleaned,
    )
