"""A run's byte-code caches: empty and read-only, so what runs is compiled from the source."""

from __future__ import annotations

from pathlib import Path


def test_every_python_folder_of_an_export_gets_an_empty_read_only_cache(tmp_path: Path):
    from consort.adapters.tdd.runner import sealed_caches

    for path in ("app/answers.py", "app/data.json", "tests/test_t1.py", "README.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    made = sealed_caches(tmp_path, ["app/answers.py", "app/data.json", "tests/test_t1.py"])
    assert made == [tmp_path / "app" / "__pycache__", tmp_path / "tests" / "__pycache__"]
    for cache in made:
        assert list(cache.iterdir()) == []
        assert cache.stat().st_mode & 0o777 == 0o555
    assert sealed_caches(tmp_path, ["app/answers.py"]) == made[:1]  # made once, kept
