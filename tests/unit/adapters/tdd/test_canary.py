"""The canaries of a junit runner: their language, where their file goes, and how a report
that forged them reads."""

import sys
from pathlib import Path
from typing import Any

import pytest

from consort.adapters.tdd.canary import Canaries, check_canaries, junit_canary_kind
from consort.adapters.tdd.junit import parse_report_bytes
from consort.core import config
from consort.core.config import CanaryKind, RunnerKind

CANARIES = Canaries(name="abc123", nonce="n0nce")


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        (["npx", "vitest", "run", "--outputFile.junit={junit}"], CanaryKind.VITEST),
        (["node_modules/.bin/jest", "--ci"], CanaryKind.JEST),
        (["npx", "jest", "--ci"], CanaryKind.JEST),
        (["gotestsum", "--junitfile", "{junit}"], CanaryKind.NONE),
        (["npm", "test"], CanaryKind.NONE),
    ],
)
def test_the_canary_language_is_told_from_the_command(command, kind):
    assert junit_canary_kind(CanaryKind.AUTO, command) is kind


def test_a_configured_canary_language_wins_over_the_command():
    assert junit_canary_kind(CanaryKind.JEST, ["npm", "test"]) is CanaryKind.JEST
    assert junit_canary_kind(CanaryKind.NONE, ["npx", "vitest"]) is CanaryKind.NONE


def test_pytest_takes_no_canary_setting():
    with pytest.raises(ValueError, match="canary applies"):
        config.TestSection(canary=CanaryKind.JEST)


@pytest.mark.parametrize(
    ("paths", "folder", "site"),
    [
        (
            ["src/a.js", "test/b.test.ts", "test/a.spec.ts"],
            "",
            "test/consort_canary_abc123.spec.ts",
        ),
        (["web/src/x.component.test.tsx"], "web", "web/src/consort_canary_abc123.test.tsx"),
        (
            ["other/t.test.js", "web/__tests__/sum.js"],
            "web",
            "web/__tests__/consort_canary_abc123.js",
        ),
        (["node_modules/p/x.test.js", "README.md"], "", "consort_canary_abc123.test.js"),
        (["README.md"], "web", "web/consort_canary_abc123.test.js"),
    ],
)
def test_the_canary_file_goes_beside_the_suites_first_test_file(paths, folder, site):
    assert CANARIES.site(paths, folder) == site


def _report(passing: str, failing: str) -> bytes:
    return (
        '<testsuites><testsuite name="t">'
        '<testcase classname="test/a.test.js" name="a &gt; works"/>'
        f'<testcase classname="test/c.test.js" name="test_abc123_passes">{passing}</testcase>'
        f'<testcase classname="test/c.test.js" name="test_abc123_fails">{failing}</testcase>'
        "</testsuite></testsuites>"
    ).encode()


def test_a_junit_report_whose_canaries_came_out_as_they_must_holds():
    raised = '<failure message="n0nce" type="Error">Error: n0nce</failure>'
    report = parse_report_bytes(_report("", raised), dialect=RunnerKind.JUNIT)
    check = check_canaries(report, CANARIES, raised_counts_as_failed=True)
    assert check.violations == ()
    assert set(check.report.cases) == {"test/a.test.js::a > works"}


@pytest.mark.parametrize(
    ("passing", "failing", "said"),
    [
        ("", "", "failing canary came out passed"),  # every failure removed
        ("", '<failure message="x" type="Error">forged</failure>', "lost its nonce"),
        ("<skipped/>", '<failure message="n0nce"/>', "passing canary came out skipped"),
    ],
)
def test_a_junit_report_that_forged_the_canaries_is_caught(passing, failing, said):
    report = parse_report_bytes(_report(passing, failing), dialect=RunnerKind.JUNIT)
    check = check_canaries(report, CANARIES, raised_counts_as_failed=True)
    assert any(said in v.detail for v in check.violations), check.violations


def test_a_report_without_the_canaries_is_caught():
    forged = b'<testsuite><testcase classname="test/a.test.js" name="a &gt; works"/></testsuite>'
    check = check_canaries(parse_report_bytes(forged, dialect=RunnerKind.JUNIT), CANARIES)
    assert check.violations and check.passing == check.failing == "missing"


def test_the_pytest_plugin_holds_neither_name_nor_nonce_and_reads_them_once(tmp_path):
    """A forger that finds the plugin file (it is on the test process's PYTHONPATH) learns
    nothing from it: the canaries' name and nonce come through a pipe the plugin empties and
    closes at import, before any module of the project's is imported."""

    from consort.adapters.tdd.canary import fresh_canaries

    canaries = fresh_canaries()
    plugin = canaries.write_plugin(tmp_path / "plugins")
    text = plugin.read_text()
    assert canaries.name not in text and canaries.nonce not in text
    assert canaries.name not in plugin.name
    suite = tmp_path / "suite"
    suite.mkdir()
    # a module imported by the suite looks for the secret after the plugin took it
    (suite / "late.py").write_text(
        "import os\n\nFD = os.environ.get('RUN_INPUT_FD')\n\n\ndef peek():\n"
        "    try:\n        return os.read(int(FD), 100) if FD else b'gone'\n"
        "    except OSError:\n        return b'closed'\n"
    )
    (suite / "test_it.py").write_text(
        "from late import peek\n\n\ndef test_it():\n    assert peek() in (b'gone', b'closed')\n"
    )
    result, check = _run_with_canaries(suite, canaries, plugin)
    assert check.violations == (), result.output
    assert check.report.case("test_it.py::test_it").outcome.value == "passed", result.output


def test_the_plugin_freezes_the_heap_only_after_the_projects_exit_handlers(tmp_path):
    """The interpreter's teardown, after every exit handler, does not collect again what the
    imports made (a third of a small suite's CPU time); the project's own exit handlers still
    run with the collector as it always is."""

    from consort.adapters.tdd.canary import fresh_canaries

    canaries = fresh_canaries()
    plugin = canaries.write_plugin(tmp_path / "plugins")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(
        "import atexit, gc, os\n\n\n"
        "@atexit.register\ndef said():\n"
        "    os.write(1, b'handler frozen: %d\\n' % (gc.get_freeze_count() > 0))\n"
    )
    (suite / "late.py").write_text(
        # A module that holds itself lives until the teardown empties it, and its probe with
        # it; what the probe calls is bound early, as the teardown empties the other modules.
        "import gc, os, sys\n\n\nclass Probe:\n"
        "    def __del__(self, write=os.write, frozen=gc.get_freeze_count):\n"
        "        write(1, b'teardown frozen: %d\\n' % (frozen() > 0))\n\n\n"
        "PROBE = Probe()\nMODULE = sys.modules[__name__]\n"
    )
    (suite / "test_it.py").write_text("import late\n\n\ndef test_it():\n    assert late.PROBE\n")
    result, check = _run_with_canaries(suite, canaries, plugin)
    assert check.violations == (), result.output
    assert "handler frozen: 0" in result.output
    assert "teardown frozen: 1" in result.output


def _default_thresholds() -> tuple[int, ...]:
    """The collector's thresholds in a fresh interpreter of the one the suites run on."""
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", "import gc; print(*gc.get_threshold())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return tuple(int(word) for word in out.split())


def test_the_plugin_pauses_the_collector_through_collection_and_freezes_what_it_made(tmp_path):
    """The project's modules are imported with the collector paused; the tests then run with
    its thresholds as they were and the import-time heap frozen, and what a test makes is still
    collected."""
    _passes_with_canaries(
        tmp_path,
        "import gc\n\nAT_IMPORT = gc.get_threshold()\n",
        "import gc, weakref\n\nimport early\n\n\nclass Node:\n    pass\n\n\n"
        "def test_it():\n"
        "    assert early.AT_IMPORT[0] > 10**8, early.AT_IMPORT\n"
        f"    assert gc.get_threshold() == {_default_thresholds()!r}, gc.get_threshold()\n"
        "    assert gc.get_freeze_count() > 0\n"
        "    node = Node()\n    node.me = node\n    gone = weakref.ref(node)\n    del node\n"
        "    gc.collect()\n    assert gone() is None\n",
    )


def test_a_project_that_sets_its_own_thresholds_keeps_them_and_nothing_is_frozen(tmp_path):
    _passes_with_canaries(
        tmp_path,
        "import gc\n\ngc.set_threshold(500, 5, 5)\n",
        "import gc\n\nimport early\n\n\ndef test_it():\n"
        "    assert gc.get_threshold() == (500, 5, 5), gc.get_threshold()\n"
        "    assert gc.get_freeze_count() == 0\n",
    )


def _passes_with_canaries(tmp_path: Path, early: str, test_it: str) -> None:
    """A suite of `early.py` and `test_it.py` run with the canary plugin: its canaries hold
    and its one test passes."""
    from consort.adapters.tdd.canary import fresh_canaries

    canaries = fresh_canaries()
    plugin = canaries.write_plugin(tmp_path / "plugins")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "early.py").write_text(early)
    (suite / "test_it.py").write_text(test_it)
    result, check = _run_with_canaries(suite, canaries, plugin)
    assert check.violations == (), result.output
    assert check.report.case("test_it.py::test_it").outcome.value == "passed", result.output


def _run_with_canaries(suite: Path, canaries: Canaries, plugin: Path) -> tuple[Any, Any]:
    """`suite`'s test_it.py run as Consort runs a suite: the canary plugin loaded, the report
    on the side channel, the secret through the run's input; the result and the canary check."""
    from consort.adapters import proc

    result = proc.run_contained(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            canaries.module,
            "-p",
            "no:cacheprovider",
            "--junitxml={side_channel}",
            "-o",
            "junit_family=xunit1",
            "test_it.py",
        ],
        cwd=suite,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{plugin.parent}:{suite}"},
        timeout=120,
        side_channel=True,
        secret_input=canaries.secret,
    )
    return result, check_canaries(parse_report_bytes(result.side_channel), canaries)
