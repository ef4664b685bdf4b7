"""Removing an export never changes anything outside it: not the temporary folder that holds
it (as root, a chmod of /tmp to 0700 locks every other user out of it), not a link's target."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from consort.adapters.tdd.export import _remove


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_root_that_is_already_gone_leaves_its_folder_alone(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    _remove(shared / "consort-run-1.2-gone")  # removed first by another process
    assert _mode(shared) == 0o1777


def test_a_read_only_export_is_removed_and_its_folder_keeps_its_mode(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    outside = tmp_path / "project-file"
    outside.write_text("kept")
    outside.chmod(0o644)
    root = shared / "consort-run-1.2-abc"
    cache = root / "cache"
    cache.mkdir(parents=True)
    (cache / "entry").write_text("x")
    (root / "dependency").symlink_to(outside)
    cache.chmod(0o555)
    root.chmod(0o555)
    _remove(root)
    assert not root.exists()
    assert _mode(shared) == 0o1777
    assert _mode(outside) == 0o644 and outside.read_text() == "kept"
