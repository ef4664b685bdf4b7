"""Answers derived from the project's files, kept until one of those files changes.

`consort next` and `consort status` derive the State from the ledger and the artifact files,
which means importing and running every artifact's pydantic model: most of their start-up. Their
answer depends on nothing else, so it is kept in `.consort/run/cache/` beside a digest of
everything derivation reads — `consort.toml`, the ledger, the feature folders, the intake and
every turn's outputs, by content — and of Consort's own code (each module's size and mtime, the
data folders of scaffolded and replayed projects aside) and the interpreter. A later call whose
digest is the same prints the kept answer without deriving.

Fail-closed: any byte changed, any file added or removed, any edit of Consort's code gives
another digest, and then the answer is derived (and every artifact validated) again. A cache
file that cannot be read, or that was written for another digest, is never used. The agents
cannot write `.consort/` (their sandbox), so they cannot plant an answer either.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from consort.core.fsutil import replace_text
from consort.core.layout import (
    FEATURES_DIR,
    INTAKE_DIR,
    LEDGER_FILE,
    PROCESS_DIR,
    TURN_OUTPUTS_DIR,
    TURNS_DIR,
)

CACHE_DIR = "cache"
FORMAT = 1


def inputs_digest(root: Path, state_dir: Path, question: str) -> str:
    """SHA-256 of `question` and of everything a derived answer depends on."""
    digest = hashlib.sha256(f"consort-derived {FORMAT}\0{question}\0".encode())
    digest.update(_code_stamp().encode())
    files = [root / "consort.toml", state_dir / LEDGER_FILE]
    for folder in (FEATURES_DIR, INTAKE_DIR):
        files += _files_below(state_dir / folder)
    turns = state_dir / TURNS_DIR
    if turns.is_dir():
        for turn in sorted(turns.iterdir()):
            files += _files_below(turn / TURN_OUTPUTS_DIR)
    for path in files:
        digest.update(os.fsencode(path.relative_to(root) if path.is_relative_to(root) else path))
        try:
            content = path.read_bytes()
        except FileNotFoundError:
            digest.update(b"\0missing\0")
        except OSError:
            digest.update(b"\0unreadable\0")
        else:
            digest.update(b"\0%d\0" % len(content))
            digest.update(content)
    return digest.hexdigest()


def load(state_dir: Path, name: str, digest: str) -> dict[str, Any] | None:
    """The answer kept under `name` for exactly `digest`, or None."""
    try:
        kept = json.loads(_path(state_dir, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("digest") != digest:
        return None
    answer = kept.get("answer")
    return answer if isinstance(answer, dict) else None


def store(state_dir: Path, name: str, digest: str, answer: dict[str, Any]) -> None:
    """Keep `answer` for `digest`; a folder that cannot be written only costs the speed.

    Written whole and renamed into place, without waiting for the disk: a machine crash may
    lose it or leave it unreadable, and then the answer is derived again (an answer is only
    ever used for the digest it was kept with)."""
    path = _path(state_dir, name)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_text(path, json.dumps({"digest": digest, "answer": answer}))


def _path(state_dir: Path, name: str) -> Path:
    safe = hashlib.sha256(name.encode()).hexdigest()[:16]
    return state_dir / PROCESS_DIR / CACHE_DIR / f"{safe}.json"


def _files_below(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    found = []
    for directory, subdirs, names in os.walk(folder):
        subdirs.sort()
        found += [Path(directory) / name for name in sorted(names)]
    return found


# The package's data folders: the projects `init` scaffolds and `demo` replays. Their Python
# files are the user's code to be, never imported by Consort, and the recorded playbook is most of
# the package's folders (walking them was most of the stamp's time).
DATA_FOLDERS = frozenset({"examples", "templates"})

_stamp: str | None = None


def _code_stamp() -> str:
    """Consort's code and the interpreter, as sizes and mtimes: an edit is a new stamp."""
    global _stamp  # noqa: PLW0603 -- computed once per process
    if _stamp is None:
        _stamp = code_stamp(Path(__file__).resolve().parent.parent)
    return _stamp


def code_stamp(package: Path) -> str:
    """The interpreter and every module of `package` (but its data folders), by size and mtime."""
    parts = [sys.version]
    for directory, subdirs, names in os.walk(package):
        top = Path(directory) == package
        subdirs[:] = sorted(
            d for d in subdirs if d != "__pycache__" and not (top and d in DATA_FOLDERS)
        )
        for name in sorted(names):
            if name.endswith(".py"):
                info = os.stat(os.path.join(directory, name))
                parts.append(f"{directory}/{name}:{info.st_size}:{info.st_mtime_ns}")
    return "\n".join(parts)
