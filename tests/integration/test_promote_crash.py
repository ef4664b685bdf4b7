"""A `kill -9` at each step of promote that moves something; the next `consort drive` alone
finishes the promotion, and the ledger says what it made of the interrupted step.

The kill is real: CONSORT_CRASH_AT makes the drive SIGKILL itself exactly when the step begins
(src/consort/core/crashpoint.py). The project is the crash campaign's small scripted one (one
feature, one story, two cycles, deploy and promote), with real git, pytest and PostgreSQL.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crash_campaign import campaign, campaign_project
from tests.helpers import consort, git

pytestmark = pytest.mark.integration

FEATURE = "F1-counter"


@pytest.fixture
def counter(tmp_path: Path) -> Iterator[Path]:
    with campaign_project(tmp_path) as root:
        yield root


def _promote_steps(root: Path) -> list[tuple[str, str]]:
    return [
        (str(e["data"]["step"]), str(e["data"]["outcome"]))
        for e in campaign.events(root)
        if e["type"] == "promote.step"
    ]


@pytest.mark.parametrize(
    ("point", "resumed"),
    [
        ("promote.merge", ("merge", "undone")),  # recorded, but main never moved
        ("promote.checkout", ("merge", "finished")),  # main moved, its files did not
        ("promote.migrate", ("migrate", "finished")),  # main's database about to be migrated
        ("promote.delete", ("delete-branches", "finished")),  # one branch deleted of two
    ],
)
def test_a_kill_inside_promote_is_resumed_by_the_next_drive(
    counter: Path, point: str, resumed: tuple[str, str]
) -> None:
    root = counter
    killed = consort("drive", cwd=root, env={"CONSORT_CRASH_AT": point}, timeout=900)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    assert "feature.promoted" not in [e["type"] for e in campaign.events(root)]
    if point == "promote.checkout":
        # main has the merge; the checkout still holds the files from before it
        assert git(root, "log", "-1", "--format=%s") == f"Promote {FEATURE}: Counter"
        assert not (root / "app" / "answers.py").exists()
    if point == "promote.delete":
        assert "story/F1-counter/S1-answers" not in git(root, "branch")
        assert "feature/F1-counter" in git(root, "branch")

    again = consort("drive", cwd=root, timeout=900)
    said = again.stdout + again.stderr
    assert again.returncode == 0, said
    assert "after a crash" in said
    steps = _promote_steps(root)
    assert resumed in steps, steps
    assert steps.count(resumed) == 1

    promoted = [e for e in campaign.events(root) if e["type"] == "feature.promoted"]
    assert len(promoted) == 1
    merge = str(promoted[0]["data"]["commit"])
    assert promoted[0]["data"]["deleted"] == ["story/F1-counter/S1-answers", "feature/F1-counter"]
    # one merge on main, made once, holding the feature's code, its checkout up to date
    subjects = git(root, "log", "--format=%s", "main").splitlines()
    assert subjects.count(f"Promote {FEATURE}: Counter") == 1
    assert len(git(root, "rev-list", "--parents", "-n", "1", merge).split()) == 3
    assert git(root, "merge-base", "--is-ancestor", merge, "main") == ""
    assert (root / "app" / "answers.py").read_text() == git(
        root, "show", "main:app/answers.py"
    ) + "\n"
    changed = git(root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!.consort")
    assert changed == ""
    verify = consort("verify", cwd=root)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert campaign.leftovers(root) == []
