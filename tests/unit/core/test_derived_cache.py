"""The kept answers of `status` and `next` are used only for exactly the files they came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from consort.core import derived_cache


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    state = root / ".consort"
    (state / "features" / "F1-x").mkdir(parents=True)
    (state / "turns" / "0001-architect-spec" / "outputs").mkdir(parents=True)
    (state / "intake").mkdir()
    (root / "consort.toml").write_text("[test]\n")
    (state / "ledger.jsonl").write_text('{"seq":1}\n')
    (state / "features" / "F1-x" / "feature-spec.json").write_text('{"stories": []}')
    (state / "turns" / "0001-architect-spec" / "outputs" / "feature-spec.json").write_text("{}")
    (state / "turns" / "0001-architect-spec" / "stdout").write_text("chatter")
    return root


def digest(root: Path, question: str = "next") -> str:
    return derived_cache.inputs_digest(root, root / ".consort", question)


def test_the_same_files_give_the_same_digest(project: Path) -> None:
    assert digest(project) == digest(project)
    assert digest(project, "next") != digest(project, "status")


@pytest.mark.parametrize(
    "path",
    [
        "consort.toml",
        ".consort/ledger.jsonl",
        ".consort/features/F1-x/feature-spec.json",
        ".consort/turns/0001-architect-spec/outputs/feature-spec.json",
    ],
)
def test_any_byte_of_what_derivation_reads_changes_the_digest(project: Path, path: str) -> None:
    before = digest(project)
    target = project / path
    content = target.read_bytes()
    target.write_bytes(content[:-1] + bytes([content[-1] ^ 1]))  # one bit, same size
    assert digest(project) != before
    target.unlink()
    assert digest(project) != before  # and a file gone


def test_a_new_file_changes_the_digest(project: Path) -> None:
    before = digest(project)
    (project / ".consort" / "features" / "F1-x" / "ux.json").write_text("{}")
    assert digest(project) != before


def test_what_derivation_does_not_read_leaves_it(project: Path) -> None:
    before = digest(project)
    (project / ".consort" / "turns" / "0001-architect-spec" / "stdout").write_text("more")
    (project / ".consort" / "run").mkdir()
    (project / ".consort" / "run" / "pid").write_text("1")
    assert digest(project) == before


def test_an_answer_is_used_only_for_its_digest(project: Path) -> None:
    state = project / ".consort"
    derived_cache.store(state, "next", "a" * 64, {"kind": "done"})
    assert derived_cache.load(state, "next", "a" * 64) == {"kind": "done"}
    assert derived_cache.load(state, "next", "b" * 64) is None
    assert derived_cache.load(state, "status", "a" * 64) is None


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"digest": "x"}', '{"answer": {}}'])
def test_a_damaged_cache_file_is_never_used(project: Path, text: str) -> None:
    state = project / ".consort"
    derived_cache.store(state, "next", "x", {"kind": "done"})
    (kept,) = (state / "run" / "cache").iterdir()
    kept.write_text(text)
    assert derived_cache.load(state, "next", "x") is None


def test_an_edit_of_consorts_code_changes_the_stamp_and_a_data_folder_does_not(
    tmp_path: Path,
) -> None:
    package = tmp_path / "consort"
    for path in ("core/derive.py", "examples/demo/app/main.py", "templates/web/app/main.py"):
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text("x = 1\n")
    (package / "lanes" / "examples").mkdir(parents=True)
    (package / "lanes" / "examples" / "rule.py").write_text("x = 1\n")  # code, despite its name
    before = derived_cache.code_stamp(package)
    for data in ("examples/demo/app/main.py", "templates/web/app/main.py"):
        (package / data).write_text("x = 22\n")
    assert derived_cache.code_stamp(package) == before
    for code in ("core/derive.py", "lanes/examples/rule.py"):
        (package / code).write_text("x = 333\n")
        assert derived_cache.code_stamp(package) != before
        before = derived_cache.code_stamp(package)
