"""Project scaffolds that `consort init --template NAME` lays down."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from consort.core.errors import UsageError
from consort.core.fsutil import atomic_write_text

PLACEHOLDER = "{{project_name}}"
GITIGNORE_SOURCE = "gitignore"  # stored without the dot so packaging keeps it


def available() -> list[str]:
    root = resources.files(__package__)
    return sorted(
        entry.name for entry in root.iterdir() if entry.is_dir() and not entry.name.startswith("_")
    )


def _files(folder: Traversable, prefix: str = "") -> list[tuple[str, Traversable]]:
    found = []
    for entry in folder.iterdir():
        relative = f"{prefix}{entry.name}"
        if entry.is_dir():
            if entry.name != "__pycache__":
                found += _files(entry, relative + "/")
        else:
            found.append((relative, entry))
    return sorted(found)


def apply(name: str, root: Path, project_name: str) -> list[str]:
    """Copy template `name` into `root`, never overwriting a file; the paths written."""
    if name not in available():
        raise UsageError(
            f"no template {name!r}", fix=f"templates: {', '.join(available()) or 'none'}"
        )
    written = []
    for relative, source in _files(resources.files(__package__) / name):
        text = source.read_text(encoding="utf-8").replace(PLACEHOLDER, project_name)
        if relative == GITIGNORE_SOURCE:
            _merge_gitignore(root / ".gitignore", text)
            continue
        target = root / relative
        if target.exists():
            continue
        atomic_write_text(target, text)
        written.append(relative)
    return written


def _merge_gitignore(path: Path, text: str) -> None:
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    present = {line.strip() for line in current.splitlines()}
    missing = [line for line in text.splitlines() if line.strip() and line.strip() not in present]
    if missing:
        prefix = "" if not current or current.endswith("\n") else "\n"
        atomic_write_text(path, current + prefix + "\n".join(missing) + "\n")
