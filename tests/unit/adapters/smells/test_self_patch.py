"""A RED test that checks what it put in place itself (a stand-in patched over the code it
tests) asserts nothing about the code; a test that patches a dependency, or checks a mock the
code called, does."""

from __future__ import annotations

import pytest

from consort.adapters.smells.checks import unasserted_tests
from consort.adapters.smells.syntax import import_aliases, parse

HEADER = (
    "from unittest import mock\n\nimport pytest\n\n"
    "from app import answers\nfrom app.answers import answer\n\n\n"
)

STAND_INS = {
    "monkeypatched": (
        "def test_a(monkeypatch):\n    monkeypatch.setattr(answers, 'answer', lambda: 42)\n"
        "    assert answers.answer() == 42\n"
    ),
    "monkeypatched-by-name": (
        "def test_a(monkeypatch):\n    monkeypatch.setattr('app.answers.answer', lambda: 42)\n"
        "    assert answers.answer() == 42\n"
    ),
    "bound-first": (
        "def test_a(monkeypatch):\n    monkeypatch.setattr(answers, 'answer', lambda: 42)\n"
        "    result = answers.answer()\n    expected = 42\n    assert result == expected\n"
    ),
    "mock-decorator": (
        "@mock.patch('app.answers.answer', return_value=42)\ndef test_a(patched):\n"
        "    assert answers.answer() == 42\n"
    ),
    "patch-object": (
        "def test_a():\n    with mock.patch.object(answers, 'answer', return_value=42):\n"
        "        assert answers.answer() == 42\n"
    ),
    "assigned": (
        "def test_a():\n    answers.answer = lambda: 42\n    assert answers.answer() == 42\n"
    ),
    "a-value": (
        "def test_a(monkeypatch):\n    monkeypatch.setattr(answers, 'VALUE', 42)\n"
        "    assert answers.VALUE == 42\n"
    ),
    "unittest": (
        "class TestA:\n    def test_a(self):\n"
        "        with mock.patch('app.answers.answer', return_value=42):\n"
        "            self.assertEqual(answers.answer(), 42)\n"
    ),
}
REAL_CHECKS = {
    "dependency-patched": (
        "def test_a(monkeypatch):\n    monkeypatch.setattr(answers, 'clock', lambda: 1)\n"
        "    assert answers.answer() == 42\n"
    ),
    "imported-before-the-patch": (
        "def test_a(monkeypatch):\n    monkeypatch.setattr(answers, 'answer', lambda: 0)\n"
        "    assert answer() == 42\n"
    ),
    "total-of-patched-fetch": (
        "def test_a(monkeypatch):\n    monkeypatch.setattr(answers, 'fetch', lambda: [1, 2])\n"
        "    result = answers.total()\n    assert result == 3\n"
    ),
    "mock-the-code-called": (
        "def test_a():\n    with mock.patch('app.answers.send') as send:\n"
        "        answers.notify()\n    send.assert_called_once_with('hi')\n"
    ),
}


def _unasserted(source: str) -> list[str]:
    tree = parse(HEADER + source)
    assert tree is not None
    return [f.name for f in unasserted_tests(tree, import_aliases(tree))]


@pytest.mark.parametrize("name", sorted(STAND_INS))
def test_a_check_of_the_tests_own_stand_in_asserts_nothing(name: str) -> None:
    assert _unasserted(STAND_INS[name]) == ["test_a"]


@pytest.mark.parametrize("name", sorted(REAL_CHECKS))
def test_a_check_of_the_code_with_its_dependencies_patched_counts(name: str) -> None:
    assert _unasserted(REAL_CHECKS[name]) == []
