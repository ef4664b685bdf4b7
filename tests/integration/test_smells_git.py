"""find_smells over two real commits: read from git objects, additions measured against base."""

from __future__ import annotations

from pathlib import Path

import pytest

from consort.adapters.smells import Smell, SmellKind, find_smells
from consort.adapters.vcs import Git

pytestmark = pytest.mark.integration

PROTECTED = ("tests/**", "**/conftest.py", "pytest.ini")

BASE_FILES = {
    "src/shop/cart.py": "def total(prices):\n    raise NotImplementedError\n",
    "src/shop/old.py": "import sys\n",
    "src/shop/untouched.py": 'CODE = "SKU-42"\n',
    "tests/test_cart.py": (
        "import pytest\n"
        "\n"
        "@pytest.mark.skip(reason='flaky upstream')\n"
        "def test_upstream():\n"
        "    assert fetch() == 'SKU-42'\n"
        "\n"
        "def test_total():\n"
        "    assert total([40, 2]) == 42\n"
    ),
    "tests/test_labels.py": "def test_label():\n    assert label() == 'Fresh basket'\n",
    "README.md": "shop\n",
}

HEAD_FILES = {
    # Hard-codes both expected answers, one of them from a test file the change did not touch.
    "src/shop/cart.py": (
        "import pytest\n"
        "\n"
        "def total(prices):\n"
        "    try:\n"
        "        return 42\n"
        "    except Exception:\n"
        "        pass\n"
        "\n"
        "def label():\n"
        "    return 'Fresh basket'\n"
    ),
    "src/shop/my module.py": "import os\n\nos._exit(0)\n",
    # The old marker only moved down two lines; one marker and one empty test are new.
    "tests/test_cart.py": (
        "import pytest\n"
        "from tests.helpers import fetch\n"
        "\n"
        "\n"
        "@pytest.mark.skip(reason='flaky upstream')\n"
        "def test_upstream():\n"
        "    assert fetch() == 'SKU-42'\n"
        "\n"
        "@pytest.mark.xfail\n"
        "def test_total():\n"
        "    assert total([40, 2]) == 42\n"
        "\n"
        "def test_total_runs():\n"
        "    total([1])\n"
    ),
    "tests/conftest.py": "import sys\n\nsys.exit(0)\n",
    "src/shop/broken.py": "def oops(:\n",
    "README.md": "shop, now with totals\n",
}


def write(tree: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = tree / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def commits(tmp_path: Path) -> tuple[Path, str, str]:
    tree = tmp_path / "shop"
    tree.mkdir()
    git = Git.init(tree)
    write(tree, BASE_FILES)
    base = git.commit_all("base")
    write(tree, HEAD_FILES)
    (tree / "src/shop/old.py").unlink()
    head = git.commit_all("head")
    return tree, base, head


def summary(smells: list[Smell]) -> list[tuple[str, int, SmellKind]]:
    return [(smell.path, smell.line, smell.kind) for smell in smells]


def test_find_smells_reports_what_head_added_over_base(commits: tuple[Path, str, str]) -> None:
    tree, base, head = commits
    smells = find_smells(tree, base, head, PROTECTED)
    assert summary(smells) == [
        ("src/shop/cart.py", 1, SmellKind.PYTEST_IN_PRODUCTION),
        ("src/shop/cart.py", 5, SmellKind.HARD_CODED_ANSWER),
        ("src/shop/cart.py", 6, SmellKind.SWALLOWED_EXCEPTION),
        ("src/shop/cart.py", 10, SmellKind.HARD_CODED_ANSWER),
        ("src/shop/my module.py", 3, SmellKind.EXIT_AT_IMPORT),
        ("tests/conftest.py", 3, SmellKind.EXIT_AT_IMPORT),
        ("tests/test_cart.py", 9, SmellKind.SKIP_MARKER_ADDED),
        ("tests/test_cart.py", 13, SmellKind.TEST_WITHOUT_ASSERTION),
    ]
    details = {(smell.path, smell.line): smell.detail for smell in smells}
    assert "tests/test_cart.py:11" in details["src/shop/cart.py", 5]
    assert "'Fresh basket'" in details["src/shop/cart.py", 10]
    assert "tests/test_labels.py:2" in details["src/shop/cart.py", 10]
    assert "pytest.mark.xfail" in details["tests/test_cart.py", 9]


def test_the_working_tree_is_not_looked_at(commits: tuple[Path, str, str]) -> None:
    tree, base, head = commits
    before = find_smells(tree, base, head, PROTECTED)
    write(tree, {"src/shop/cart.py": "def total(prices):\n    return sum(prices)\n"})
    (tree / "tests/conftest.py").unlink()
    assert find_smells(tree, base, head, PROTECTED) == before


def test_a_clean_change_has_no_smells(commits: tuple[Path, str, str]) -> None:
    tree, _, head = commits
    git = Git(tree)
    write(
        tree,
        {
            "src/shop/cart.py": "def total(prices):\n    return sum(prices)\n",
            "tests/test_cart.py": "def test_total():\n    assert total([40, 2]) == 42\n",
        },
    )
    for relative in ("src/shop/my module.py", "tests/conftest.py", "src/shop/broken.py"):
        (tree / relative).unlink()
    fixed = git.commit_all("fixed")
    assert find_smells(tree, head, fixed, PROTECTED) == []


def test_removing_a_skip_marker_is_not_an_addition(commits: tuple[Path, str, str]) -> None:
    tree, base, head = commits
    # From head back to base: a marker, the exits and the hard-coded answers all disappear.
    smells = find_smells(tree, head, base, PROTECTED)
    assert summary(smells) == []
