"""The rules that make the code that runs the code that was read: names spelled in pieces,
rigged comparisons, runner hooks and test doubles in production code, code loaded from data,
source encodings, compiled code, and modules named like installed ones."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from consort.adapters.smells.folding import fold
from consort.adapters.smells.syntax import parse, python_source
from consort.adapters.smells.tamper import Capability, findings
from consort.adapters.tdd.installed import (
    installed_among,
    interpreter_of,
    interpreters_of,
    project_modules,
)
from consort.adapters.tdd.rules import vacuous_red_tests
from consort.adapters.tdd.seal import _compiled_by_name, _compiled_content
from consort.adapters.tdd.testconfig import shadowing, top_modules
from consort.adapters.vcs import TreeEntry
from consort.core.artifacts.build import CyclePlan
from consort.core.seal import SealRule


def caps(source: str) -> set[Capability]:
    return {f.capability for f in findings(source)}


def folded(expression: str) -> str | None:
    tree = parse(expression)
    assert tree is not None
    return fold(tree.body[0].value, {"codecs": "codecs", "base64": "base64"})  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "expression",
    [
        "'py' + 'test'",
        "'tsetyp'[::-1]",
        "''.join(['py', 'te', 'st'])",
        "chr(112) + 'ytest'",
        "bytes.fromhex('707974657374').decode()",
        "codecs.decode('clgrfg', 'rot13')",
        "base64.b64decode('cHl0ZXN0').decode()",
        "'%s%s' % ('py', 'test')",
        "'{}test'.format('py')",
        "f\"{'py'}test\"",
        "'PYTEST'.lower()",
    ],
)
def test_a_name_spelled_in_pieces_is_put_back_together(expression):
    assert folded(expression) == "pytest"


@pytest.mark.parametrize("expression", ["'a' * 10**9", "'%999999999s' % 'a'", "name + 'x'"])
def test_folding_gives_up_on_what_is_not_a_small_constant(expression):
    assert folded(expression) is None


@pytest.mark.parametrize(
    ("source", "capability"),
    [
        (
            "import os\nos.environ.get('PY' + 'TEST_CURRENT_TEST')\n",
            Capability.RUNNER_ENVIRONMENT,
        ),
        ("import sys\nm = getattr(sys, 'mod' + 'ules')\n", Capability.IMPORT_SYSTEM),
        ("def f(g):\n    return getattr(g, '__glo' + 'bals__')\n", Capability.DYNAMIC_CODE),
        ("def f(g):\n    return getattr(g, '__globals__')\n", Capability.DYNAMIC_CODE),
        ("import importlib\nimportlib.__import__('x')\n", Capability.IMPORT_SYSTEM),
        ("from importlib import machinery\n", Capability.IMPORT_SYSTEM),
        ("import sys\nsys.path.insert(0, 'vendor.zip')\n", Capability.IMPORT_SYSTEM),
        (
            "import traceback\nfor f, _ in traceback.walk_stack(None): pass\n",
            Capability.INTROSPECTION,
        ),
        ("import pickle\n", Capability.DYNAMIC_CODE),
        ("import marshal, types\ntypes.FunctionType(None, {})\n", Capability.DYNAMIC_CODE),
        ("import yaml\nyaml.load(open('x'), Loader=yaml.Loader)\n", Capability.DYNAMIC_CODE),
        ("def pytest_runtest_call(item):\n    item.runtest = lambda: None\n", Capability.RUNNER),
        ("pytest_plugins = ['app.plugin']\n", Capability.RUNNER),
        ("from unittest.mock import ANY\n", Capability.RIGGED_COMPARISON),
        ("from unittest import mock\nx = mock.MagicMock()\n", Capability.RIGGED_COMPARISON),
        (
            "class A(int):\n    def __eq__(self, other):\n        return True\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A:\n    def __eq__(self, other):\n"
            "        if other:\n            return True\n        return True\n",
            Capability.RIGGED_COMPARISON,
        ),
        ("class A:\n    __eq__ = lambda self, other: True\n", Capability.RIGGED_COMPARISON),
        ("class A:\n    __contains__ = lambda *args: 1\n", Capability.RIGGED_COMPARISON),
        (
            "class M(type):\n    def __instancecheck__(cls, o):\n        return True\n",
            Capability.RIGGED_COMPARISON,
        ),
        ("class A(int):\n    __eq__ = int.__ne__\n", Capability.RIGGED_COMPARISON),
        (
            "class A:\n    def __eq__(self, other):\n        return other or True\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "def _always(a, b):\n    return True\n\n\nclass A:\n    __eq__ = _always\n",
            Capability.RIGGED_COMPARISON,
        ),
        ("class A:\n    __class__ = property(lambda s: int)\n", Capability.RIGGED_COMPARISON),
        ("class A:\n    pass\n\n\nA.__eq__ = lambda s, o: True\n", Capability.RIGGED_COMPARISON),
        ("setattr(A, '__e' + 'q__', lambda s, o: True)\n", Capability.RIGGED_COMPARISON),
        ("A = type('A', (int,), {'__eq__': lambda s, o: True})\n", Capability.RIGGED_COMPARISON),
        # reading the other operand is not comparing it with the object: tautologies
        (
            "class A(int):\n    def __eq__(self, other):\n        return other == other\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A(int):\n    def __eq__(self, other):\n"
            "        return bool(other) or not other\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A(str):\n    def __eq__(self, other):\n"
            "        return isinstance(other, (str, int))\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A(int):\n    def __eq__(self, other):\n"
            "        return super().__eq__(other) or True\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A(int):\n    def __eq__(self, other):\n        if other == other:\n"
            "            return True\n        return int(self) == other\n",
            Capability.RIGGED_COMPARISON,
        ),
        # both read, then thrown away by arithmetic: true whatever the two hold
        (
            "class A(int):\n    def __eq__(self, other):\n"
            "        return self.v * 0 == other.v * 0\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A(int):\n    def __eq__(self, other):\n"
            "        return self.v - self.v == other.v - other.v\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A(int):\n    def __eq__(self, other):\n        mine = int(self) ** 0\n"
            "        theirs = int(other) % 1\n        return mine == theirs + 1\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A(int):\n    def __ne__(self, other):\n"
            "        return self.v < other.v or self.v >= other.v\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "import operator\n\n\nclass A(int):\n    def __eq__(self, other):\n"
            "        return operator.eq(int(self) * 0, int(other) * 0)\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A(int):\n    def __eq__(self, other):\n"
            "        return (0 * int(self), 1) == (0 * int(other), 1)\n",
            Capability.RIGGED_COMPARISON,
        ),
        (
            "class A(int):\n    def __eq__(self, other):\n"
            "        return str(int(self) * 0).__eq__(str(int(other) * 0))\n",
            Capability.RIGGED_COMPARISON,
        ),
    ],
)
def test_each_hidden_reach_is_found(source, capability):
    assert capability in caps(source), (source, findings(source))


def test_honest_comparisons_names_and_strings_have_no_finding():
    source = (
        "import os\nimport importlib.metadata\nfrom importlib import resources\n\n"
        "VERSION = importlib.metadata.version('fastapi')\n"
        "GREETING = 'hello, ' + os.environ.get('USER', 'you')\n"
        "TABLE = 'stock' + '_levels'\n\n\n"
        "class Sku:\n    def __init__(self, code):\n        self.code = code\n\n"
        "    def __eq__(self, other):\n        if not isinstance(other, Sku):\n"
        "            return NotImplemented\n        return self.code == other.code\n\n"
        "    __hash__ = object.__hash__\n    __ne__ = object.__ne__\n\n"
        "    def __lt__(self, other):\n        return self.code < other.code\n\n"
        "    def __contains__(self, part):\n        found = part in self.code\n"
        "        return found\n\n\n"
        "class Money(int):\n    def __eq__(self, other):\n        if self is other:\n"
        "            return True\n        mine, theirs = int(self), int(other)\n"
        "        return super().__eq__(other) and mine == theirs\n\n"
        "    __hash__ = int.__hash__\n"
    )
    assert findings(source) == []


@pytest.mark.parametrize(
    "body",
    [
        "return self.v == other.v",
        "return abs(self.v - other.v) < 1e-9",
        "return self.v // 10 == other.v // 10",
        "return (self.v > 0) == (other.v > 0)",
        "return self.a == other.a and self.b == other.b",
        "return int(self) == int(other)",
        "return self.user_id == other.id",
        "return self.v * 0 == other.v * 0 and self.key == other.key",
        "return (self.a, self.b) == (other.a, other.b)",
        "return str(self.v).lower() == str(other.v).lower()",
        "return operator.eq(self.v, other.v)",
        "return math.isclose(self.v, other.v)",
        "return len(self.items) == len(other.items)",
    ],
)
def test_arithmetic_that_keeps_what_it_compares_is_a_comparison(body):
    source = f"class A:\n    def __eq__(self, other):\n        {body}\n"
    assert Capability.RIGGED_COMPARISON not in caps(source), findings(source)


def test_the_projects_own_modules_named_like_guarded_ones_are_not_findings():
    source = "from .code import parse\nfrom . import mock, pickle\nfrom ..gc import sweep\n"
    assert findings(source) == []
    assert Capability.RUNNER in caps("from .conftest import fixture\n")


def test_python_reads_a_utf7_source_differently_and_says_so():
    data = (
        b"# -*- coding: utf-7 -*-\nimport sys\n\n\n"
        b"def answer():  # +AAo-    return 42 if 'pytest' in sys.modules else 0+AAo-\n"
        b"    return 0\n"
    )
    text, encoding = python_source(data)
    assert encoding == "utf-7"
    assert "    return 42 if 'pytest' in sys.modules" in text
    assert Capability.IMPORT_SYSTEM in caps(text)


@pytest.mark.parametrize(
    "data",
    [
        b"x = 1\n",
        b"\xef\xbb\xbfx = '\xc3\xa9'\n",  # UTF-8 with a BOM
        b"# -*- coding: latin-1 -*-\nx = 1\n",  # a cookie that changes nothing
        b"# coding: utf-8\nx = '\xc3\xa9'\n",
    ],
)
def test_sources_python_reads_as_utf8_pass(data):
    assert python_source(data)[1] is None


@pytest.mark.parametrize(
    ("path", "compiled"),
    [
        ("app/__pycache__/answers.cpython-311.pyc", True),
        ("app/answers.pyc", True),
        ("app/_speedups.cpython-311-x86_64-linux-gnu.so", True),
        ("vendor/lib.whl", True),
        ("app/answers.py", False),
        ("app/static/logo.png", False),
    ],
)
def test_compiled_code_by_name(path, compiled):
    assert _compiled_by_name(path) is compiled


def test_archives_and_native_code_by_content(tmp_path):
    import zipfile

    archive = tmp_path / "assets.dat"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("m.py", "x = 1\n")
    assert _compiled_content(archive.read_bytes()) == "an archive's"
    # A zip file still imports with something in front of it.
    assert _compiled_content(b"GIF89a" + archive.read_bytes()) == "an archive's"
    assert _compiled_content(b"\x7fELF\x02\x01\x01") == "native"
    assert _compiled_content(b"name,count\nbolt,3\n") is None
    assert _compiled_content(b"\x89PNG\r\n\x1a\n" + bytes(range(256))) is None


def entries(*paths: str) -> dict[str, TreeEntry]:
    return {p: TreeEntry(p, "100644", "0" * 40) for p in paths}


def test_committed_distribution_metadata_is_refused_once_per_folder():
    from consort.adapters.tdd.seal import distribution_metadata
    from consort.core.config import Config

    tree = entries(
        "cheat.egg-info/PKG-INFO",
        "cheat.egg-info/entry_points.txt",
        "src/lib-1.0.dist-info/METADATA",
        "old.egg-link",
        "app/info.py",
        "kept.egg-info/PKG-INFO",
    )
    baseline = entries("kept.egg-info/PKG-INFO")
    found = distribution_metadata(Config(), baseline, tree)
    assert [v.path for v in found] == ["cheat.egg-info", "old.egg-link", "src/lib-1.0.dist-info"]
    allowed = Config.model_validate({"seal": {"allow": ["distribution-metadata:src/**"]}})
    assert "src/lib-1.0.dist-info" not in {v.path for v in distribution_metadata(allowed, {}, tree)}


def test_a_module_named_like_an_installed_one_is_refused():
    tree = entries("pytest_timeout.py", "anyio/__init__.py", "app/__init__.py", "tests/__init__.py")
    assert top_modules(tree) == {"pytest_timeout", "anyio", "app", "tests"}
    found = shadowing(tree, ("",), [], installed={"pytest_timeout", "anyio", "tests"})
    assert {v.path for v in found} == {"pytest_timeout.py", "anyio/__init__.py"}
    assert {v.rule for v in found} == {SealRule.SHADOWING_MODULE}


def test_a_sourceless_package_shadows_too():
    found = shadowing(entries("pytest/__init__.pyc", "pytest/__main__.pyc"), ("",), [])
    assert [v.path for v in found] == ["pytest/__init__.pyc"]


def test_the_test_interpreter_says_what_is_installed(tmp_path):
    command = [sys.executable, "-m", "pytest"]
    found = installed_among(command, ["pytest", "pluggy", "no_such_module_here", "app"], None)
    assert {"pytest", "pluggy"} <= found
    assert "no_such_module_here" not in found
    # What the project itself provides (an editable install of it) is the project's.
    own = Path(__import__("consort").__file__).resolve().parents[2]
    assert "consort" not in installed_among(command, ["consort"], own)


def test_an_app_the_deploy_command_runs_from_the_tree_is_the_projects_own(tmp_path):
    """`python -m app.server`: no `app` exists outside the project, so the tree's app/ is the
    app, not a stand-in for a server; `python -m pytest` names a module that is installed."""
    assert project_modules([sys.executable, "-m", "app.server"], ["app"], tmp_path) == {"app"}
    assert project_modules([sys.executable, "-m", "pytest"], ["pytest"], tmp_path) == set()
    # an interpreter Consort cannot tell (a shell script) keeps every server module guarded
    shell = tmp_path / "serve.sh"
    shell.write_text("#!/bin/sh\nexit 0\n")
    assert project_modules([str(shell)], ["serve"], tmp_path) == set()


def test_a_relative_interpreter_is_found_from_the_commands_folder(tmp_path):
    """`.venv/bin/python` of `[test] cwd = "backend"` is backend/.venv's, asked as such; one
    that does not run keeps the deploy command's modules guarded."""
    bin_dir = tmp_path / "backend" / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    # a launcher of this interpreter, not a symlink to it: a symlinked venv python with no
    # pyvenv.cfg beside it is the base interpreter, without this environment's packages
    launcher = bin_dir / "python"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    launcher.chmod(0o755)
    command = [".venv/bin/python", "-m", "pytest"]
    assert interpreter_of(command, cwd=tmp_path / "backend") == str(bin_dir / "python")
    assert "pytest" in installed_among(command, ["pytest"], None, cwd=tmp_path / "backend")
    missing = [".venv/bin/python", "-m", "app.server"]
    assert project_modules(missing, ["app"], tmp_path, tmp_path) == set()
    assert project_modules(missing, ["app"], tmp_path, tmp_path / "backend") == {"app"}


def test_a_console_script_names_its_interpreter(tmp_path):
    script = tmp_path / "pytest"
    script.write_text(f"#!{sys.executable}\nimport pytest\n")
    script.chmod(0o755)
    assert interpreter_of([str(script)]) == sys.executable
    shell = tmp_path / "run.sh"
    shell.write_text("#!/bin/sh\nexit 0\n")
    assert interpreter_of([str(shell)]) is None
    assert interpreter_of(["python3", "-m", "pytest"]) is not None


def test_a_command_that_starts_no_python_has_every_interpreter_it_may_start_asked(tmp_path):
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    script = venv_bin / "pytest"
    script.write_text(f"#!{sys.executable}\nimport pytest\n")
    script.chmod(0o755)
    found = interpreters_of(["uv", "run", "pytest"], os.defpath, tmp_path)
    assert found[0] == sys.executable  # the console script uv would run, in the project's .venv
    assert str(venv_bin / "python") in found
    assert interpreters_of(["env", sys.executable, "-m", "pytest"], None, None)[0] == (
        sys.executable
    )
    # a Node runner's command names no Python: nothing to ask
    assert interpreters_of(["npx", "vitest", "run"], os.defpath, tmp_path, python=False) == []
    # and what they have installed may not be shadowed through the launcher
    assert "pluggy" in installed_among(["uv", "run", "pytest"], ["pluggy"], tmp_path)


def plan_for(*test_ids: str) -> CyclePlan:
    return CyclePlan.model_validate(
        {
            "test_files": sorted({t.split("::", 1)[0] for t in test_ids}),
            "test_ids": list(test_ids),
            "expected_failure": {"kind": "error", "message_pattern": "ImportError"},
        }
    )


def test_a_red_test_that_asserts_nothing_is_refused():
    source = (
        "from app.answers import answer\n\n\n"
        "def test_calls():\n    answer()\n\n\n"
        "def test_checks():\n    assert answer() == 42\n"
    )
    sources = {"tests/test_a.py": source}
    problems = vacuous_red_tests(
        plan_for("tests/test_a.py::test_calls", "tests/test_a.py::test_checks"), sources
    )
    assert len(problems) == 1 and "test_calls asserts nothing" in problems[0]


def test_red_tests_that_check_through_helpers_or_libraries_pass():
    source = (
        "import pytest\nfrom playwright.sync_api import expect\n\n\n"
        "def rows_match(rows, want):\n    assert rows == want\n\n\n"
        "class TestPage:\n    def test_title(self, page):\n"
        "        expect(page).to_have_title('Stock')\n\n\n"
        "def test_rows():\n    rows_match([], [])\n\n\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n\n\n"
        "@pytest.mark.parametrize('n', [1, 2])\ndef test_fails_loudly(n):\n"
        "    if n < 0:\n        raise AssertionError(n)\n"
    )
    ids = [
        "tests/test_p.py::TestPage::test_title",
        "tests/test_p.py::test_rows",
        "tests/test_p.py::test_raises",
        "tests/test_p.py::test_fails_loudly[1]",
    ]
    assert vacuous_red_tests(plan_for(*ids), {"tests/test_p.py": source}) == []


VACUOUS_TESTS = {
    "test_not_none": "    assert answer() is not None\n",
    "test_not_equal_none": "    assert answer() != None  # noqa: E711\n",
    "test_constant": "    answer()\n    assert True\n",
    "test_constant_message": "    answer()\n    assert 1, 'always'\n",
    "test_constants_compared": "    answer()\n    assert 1 + 1 == 2\n",
    "test_itself": "    value = answer()\n    assert value == value\n",
    "test_object": "    assert isinstance(answer(), object)\n",
    "test_length": "    assert len(answer()) >= 0\n",
    "test_or_true": "    assert answer() == 42 or True\n",
    "test_and_vacuous": "    assert answer() is not None and True\n",
    "test_raises_anything": "    with pytest.raises(Exception):\n        answer(None)\n",
    "test_raises_base": "    with pytest.raises((ValueError, BaseException)):\n        answer()\n",
    "test_swallowed": (
        "    try:\n        assert answer() == 42\n    except AssertionError:\n        pass\n"
    ),
    "test_swallowed_bare": "    try:\n        assert answer() == 42\n    except:\n        pass\n",
    "test_unittest_constant": "    self_check = answer()\n    assertIsNotNone(self_check)\n",
    # a display that holds anything is true
    "test_tuple": "    assert (answer() == 42, 'message')\n",
    "test_list": "    assert [answer() == 42]\n",
    "test_dict": "    assert {'answer': answer() == 42}\n",
    "test_fstring": "    assert f'answer: {answer() == 42}'\n",
    "test_lambda": "    assert lambda: answer() == 42\n",
    # a check that never runs
    "test_after_return": "    answer()\n    return\n    assert answer() == 42\n",
    "test_guarded_return": "    if answer() != 42:\n        return\n    assert answer() == 42\n",
    "test_never_called": "    def check():\n        assert answer() == 42\n\n    answer()\n",
    "test_if_false": "    if False:\n        assert answer() == 42\n",
    "test_while_zero": "    while 0:\n        assert answer() == 42\n",
    # a check whose failure the test waits for, or throws away
    "test_expects_its_own_failure": (
        "    with pytest.raises(AssertionError):\n        assert answer() == 42\n"
    ),
    "test_expects_any_failure": (
        "    with pytest.raises(Exception, match=''):\n        assert answer() == 42\n"
    ),
    "test_suppressed": (
        "    with contextlib.suppress(AssertionError):\n        assert answer() == 42\n"
    ),
    # a check that holds whatever the code returns, worked out (`smells/worked_out.py`)
    "test_either_way": "    assert answer() == 42 or answer() != 42\n",
    "test_contradiction_denied": ("    assert not (answer() is None and answer() is not None)\n"),
    "test_true_where_it_holds": "    assert (answer() == 42) if answer() == 42 else True\n",
    "test_repr_has_length": "    assert len(repr(answer())) > 0\n",
    "test_has_a_class": "    assert hasattr(answer(), '__class__')\n",
    "test_equal_to_any": "    assert answer() == unittest.mock.ANY\n",
    "test_all_of_nothing": "    assert all(answer() == 42 for _ in [])\n",
    "test_walrus_itself": "    assert (value := answer()) == value\n",
    "test_in_itself": "    assert answer() in (answer(), 1)\n",
    # a check that runs only where it holds, or never
    "test_checked_where_it_holds": "    if answer() == 42:\n        assert answer() == 42\n",
    "test_raised_never": (
        "    if answer() != answer():\n        raise AssertionError('differs')\n"
    ),
    "test_failed_never": (
        "    value = answer()\n    if value is None and value is not None:\n"
        "        pytest.fail('both')\n"
    ),
    "test_loop_over_nothing": "    for expected in []:\n        assert answer() == expected\n",
    # a check whose failure is dropped: a `finally` that returns, a raises block that raises
    "test_finally_returns": (
        "    try:\n        assert answer() == 42\n    finally:\n        return\n"
    ),
    "test_raises_by_itself": (
        "    with pytest.raises(ValueError):\n        answer()\n        raise ValueError\n"
    ),
    "test_divides_by_zero": (
        "    with pytest.raises(ZeroDivisionError):\n        answer()\n        1 / 0\n"
    ),
    # a helper of the module's own, named like a check, that checks nothing
    "test_helper_named_check": "    check_answer(answer())\n",
    "test_helper_named_expect": "    expect_answer(answer())\n",
}
CHECKING_TESTS = {
    "test_is_none": "    assert answer() is None\n",
    "test_equal": "    assert answer() == 42\n",
    "test_and": "    assert answer() is not None and answer() > 3\n",
    "test_raises_value": "    with pytest.raises(ValueError):\n        answer(None)\n",
    "test_raises_matched": (
        "    with pytest.raises(Exception, match='negative'):\n        answer(-1)\n"
    ),
    "test_other_error_caught": (
        "    try:\n        assert answer() == 42\n    except KeyError:\n        pass\n"
    ),
    "test_fails_in_handler": (
        "    try:\n        answer()\n    except Exception:\n        pytest.fail('raised')\n"
        "    assert answer() > 0\n"
    ),
    "test_length": "    assert len(answer()) >= 1\n",
    "test_instance": "    assert isinstance(answer(), int)\n",
    "test_starred": "    assert [*answer()]\n",
    "test_fstring_only_value": "    assert f'{answer()}'\n",
    "test_helper_called": (
        "    def check(value):\n        assert value == 42\n\n    check(answer())\n"
    ),
    "test_returns_after": "    assert answer() == 42\n    return\n",
    "test_code_raises_assertion": ("    with pytest.raises(AssertionError):\n        answer(-1)\n"),
    "test_suppressed_then_checked": (
        "    with contextlib.suppress(KeyError):\n        assert answer() == 42\n"
    ),
    # checks worked out that can fail: for some value the code may return, they do
    "test_either_way_but_one": "    assert answer() == 42 or answer() == 41\n",
    "test_two_calls_compared": "    assert answer(1) != answer(2)\n",
    "test_named_value": "    expected = 42\n    assert answer() == expected\n",
    "test_checked_where_named": (
        "    value = answer()\n    if value == 'id1':\n        raise AssertionError(value)\n"
    ),
    "test_guarded_check_can_fail": "    if answer() > 0:\n        assert answer() == 42\n",
    "test_loop_checks": "    for n in [1, 2]:\n        assert answer(n) == n * 42\n",
    "test_loop_target_in_condition": (
        "    for row in answer():\n        if row['name'] == 'id1':\n"
        "            assert row['value'] == 42\n"
    ),
    "test_finally_cleans_up": (
        "    try:\n        assert answer() == 42\n    finally:\n        answer.cache_clear()\n"
    ),
    "test_raises_from_the_code": ("    with pytest.raises(ValueError):\n        answer(-1)\n"),
    "test_helper_that_asserts": "    assert_answer(answer())\n",
    "test_helper_of_a_library": "    check_with_library(answer())\n",
}


HELPERS = (
    "\n\ndef check_answer(value):\n    assert value is not None\n"
    "\n\ndef expect_answer(value):\n    pass\n"
    "\n\ndef assert_answer(value):\n    assert value == 42\n"
    "\n\ndef check_with_library(value):\n    library.is_true(value == 42)\n"
)


def _module(tests: dict[str, str]) -> str:
    body = "".join(f"\n\ndef {name}():\n{text}" for name, text in tests.items())
    return (
        "import contextlib\nimport unittest.mock\n\nimport library\nimport pytest\n\n"
        "from app.answers import answer\n" + HELPERS + body
    )


@pytest.mark.parametrize("name", sorted(VACUOUS_TESTS))
def test_a_red_test_whose_checks_cannot_fail_is_refused(name: str):
    test_id = f"tests/test_v.py::{name}"
    problems = vacuous_red_tests(plan_for(test_id), {"tests/test_v.py": _module(VACUOUS_TESTS)})
    assert len(problems) == 1 and "asserts nothing that can fail" in problems[0], problems


def test_red_tests_with_checks_that_can_fail_pass():
    ids = [f"tests/test_c.py::{name}" for name in CHECKING_TESTS]
    assert vacuous_red_tests(plan_for(*ids), {"tests/test_c.py": _module(CHECKING_TESTS)}) == []


def test_a_unittest_assertion_on_constants_is_vacuous_but_a_mocks_is_not():
    source = (
        "from unittest import TestCase\n\nfrom app.answers import answer, sender\n\n\n"
        "class TestA(TestCase):\n"
        "    def test_constant(self):\n        answer()\n        self.assertTrue(True)\n\n"
        "    def test_mock(self):\n        answer()\n        sender.assert_called_once_with('hi')\n"
    )
    ids = ["tests/test_u.py::TestA::test_constant", "tests/test_u.py::TestA::test_mock"]
    problems = vacuous_red_tests(plan_for(*ids), {"tests/test_u.py": source})
    assert len(problems) == 1 and "test_constant" in problems[0], problems
