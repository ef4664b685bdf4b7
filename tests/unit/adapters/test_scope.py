"""The write-scope glob matcher and the classification of changed paths."""

from __future__ import annotations

import pytest

from consort.adapters.scope import Breach, ChangeKind, FileChange, WriteScope, glob_match


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        # a trailing ** is everything below the folder, at any depth, and not the folder itself
        ("tests/**", "tests/test_a.py", True),
        ("tests/**", "tests/unit/deep/test_b.py", True),
        ("tests/**", "tests", False),
        ("tests/**", "testsuite/test_a.py", False),
        ("tests/**", "src/tests/test_a.py", False),
        # a leading **/ is any number of folders, zero included
        ("**/conftest.py", "conftest.py", True),
        ("**/conftest.py", "tests/conftest.py", True),
        ("**/conftest.py", "a/b/c/conftest.py", True),
        ("**/conftest.py", "tests/myconftest.py", False),
        ("**/conftest.py", "tests/conftest.pyc", False),
        # an inner ** too
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/xb", False),
        ("a/**/b", "a/x/b/c", False),
        # patterns are anchored at the top of the tree
        ("pytest.ini", "pytest.ini", True),
        ("pytest.ini", "sub/pytest.ini", False),
        ("*.md", "README.md", True),
        ("*.md", "docs/guide.md", False),
        # * stays inside one segment (unlike fnmatch, where "src/*" matches "src/a/b")
        ("src/*", "src/a.py", True),
        ("src/*", "src/pkg/a.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/pkg/sub/a.py", True),
        ("src/**/*.py", "src/pkg/a.txt", False),
        ("src/**/*.py", "lib/src/a.py", False),
        ("*.py", ".hidden.py", True),
        ("a**b", "aXYb", True),
        ("a**b", "aX/Yb", False),
        # ? is one character, never a separator
        ("file?.py", "file1.py", True),
        ("file?.py", "file10.py", False),
        ("file?.py", "file/.py", False),
        # character classes
        ("[abc].py", "b.py", True),
        ("[abc].py", "d.py", False),
        ("[!abc].py", "d.py", True),
        ("[!abc].py", "a.py", False),
        ("[a-c]x", "bx", True),
        ("[a-c]x", "dx", False),
        ("a[/]b", "a/b", False),
        ("[]]x", "]x", True),
        ("a[b", "a[b", True),  # an unclosed bracket is a literal
        # escapes and regex metacharacters are literal
        ("\\*.py", "*.py", True),
        ("\\*.py", "a.py", False),
        ("a+b(c)$.py", "a+b(c)$.py", True),
        ("a.py", "aXpy", False),
        # a trailing slash means the folder's contents; "./" in front of a path is ignored
        ("migrations/", "migrations/001_init.sql", True),
        ("migrations/", "migrations", False),
        ("src/**", "./src/a.py", True),
        ("**", ".consort/ledger.jsonl", True),
        ("**", "anything/at/all", True),
        (".consort/**", ".consort/features/F1/spec.json", True),
        (".consort/**", "src/.consort", False),
        ("a//b", "a/b", True),
    ],
)
def test_glob_match(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_empty_pattern_is_refused() -> None:
    with pytest.raises(ValueError, match="empty glob"):
        glob_match("/", "a")


def _kinds(scope: WriteScope, *paths: str) -> dict[str, tuple[Breach, str]]:
    changes = [FileChange(path, ChangeKind.MODIFIED) for path in paths]
    return {v.path: (v.breach, v.rule) for v in scope.violations(changes)}


def test_protected_wins_over_writable() -> None:
    scope = WriteScope(writable=("**",), protected=("tests/**", "**/conftest.py"))
    found = _kinds(scope, "src/app.py", "tests/test_app.py", "pkg/conftest.py")
    assert found == {
        "tests/test_app.py": (Breach.PROTECTED, "tests/**"),
        "pkg/conftest.py": (Breach.PROTECTED, "**/conftest.py"),
    }


def test_state_folder_is_always_protected() -> None:
    scope = WriteScope(writable=("**",), protected=())
    assert _kinds(scope, ".consort/ledger.jsonl") == {
        ".consort/ledger.jsonl": (Breach.PROTECTED, ".consort/**")
    }


def test_outputs_are_allowed_even_under_protected_paths() -> None:
    output = ".consort/features/F1/feature-spec.json"
    scope = WriteScope(writable=(), protected=("tests/**",), outputs=frozenset({output}))
    found = _kinds(scope, output, ".consort/features/F1/other.json")
    assert found == {".consort/features/F1/other.json": (Breach.PROTECTED, ".consort/**")}


def test_paths_outside_every_writable_glob_are_violations() -> None:
    scope = WriteScope(writable=("src/**", "migrations/**"), protected=())
    assert _kinds(scope, "src/a.py", "migrations/001.sql", "setup.py") == {
        "setup.py": (Breach.NOT_WRITABLE, "src/**, migrations/**")
    }
    assert _kinds(WriteScope((), ()), "x") == {"x": (Breach.NOT_WRITABLE, "nothing is writable")}


def test_violation_text_names_path_kind_and_rule() -> None:
    scope = WriteScope(writable=("src/**",), protected=("tests/**",))
    (violation,) = scope.violations([FileChange("tests/t.py", ChangeKind.DELETED)])
    assert str(violation) == "tests/t.py deleted: it is protected by `tests/**`"


def test_a_bad_glob_fails_when_the_scope_is_made() -> None:
    with pytest.raises(ValueError, match="empty glob"):
        WriteScope(writable=("",), protected=())
