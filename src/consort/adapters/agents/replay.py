"""The `replay` adapter: serves recorded turns, so a whole run can be repeated without a model.

Each turn is looked up in the recording folder (`dir` in consort.toml) under its key:

- design turns:  `<feature>/<step>`                           e.g. `F1-stock/spec`
- build turns:   `<feature>/<story>/<item>/<step>/<attempt>`  e.g. `F1-stock/S1-file/T3/green/1`

and the key's folder holds what the agent did in that turn:

```
<key>/files/**        copied into the working tree, at the same relative paths
<key>/outputs/<name>  written to the path the task gives for output <name>
<key>/delete.json     a JSON list of paths, relative to the working tree, to delete
                      (files or folders; paths already absent are fine)
<key>/stdout          optional: copied to the turn's stdout
<key>/stderr          optional: copied to the turn's stderr
<key>/exit_code       optional: the exit status to report (text; default 0), to replay a
                      failed attempt
```

Deletions happen first, then `files/`, then `outputs/`: a recorded turn that deleted a file and
wrote it again leaves it written. A missing key, a recorded output the task does not ask for, or
a path in delete.json that leaves the working tree fails the turn with a message naming the key
and the recording folder. The replayed changes go through the same checks as a live agent's:
write scope, output schemas, tests.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from consort.adapters.agents.base import TurnOutcome
from consort.adapters.agents.task import Task, TurnDir
from consort.core.vocabulary import SandboxUse

FILES_DIR = "files"
OUTPUTS_DIR = "outputs"
DELETE_FILE = "delete.json"
EXIT_CODE_FILE = "exit_code"


class ReplayError(Exception):
    """The recording cannot serve this turn."""


def replay_key(task: Task) -> PurePosixPath:
    if task.step.is_build:
        # Task validation guarantees story and item on build turns.
        return PurePosixPath(
            task.feature, str(task.story), str(task.item), task.step, str(task.attempt)
        )
    return PurePosixPath(task.feature, task.step)


@dataclass(frozen=True)
class ReplayAdapter:
    directory: Path

    def run(
        self, task: Task, turn_dir: TurnDir, workdir: Path, env: Mapping[str, str]
    ) -> TurnOutcome:
        started = time.monotonic()
        key = replay_key(task)
        folder = self.directory / key
        turn_dir.path.mkdir(parents=True, exist_ok=True)
        try:
            if not folder.is_dir():
                raise ReplayError(
                    f"no recorded turn for key {key} in replay folder {self.directory} "
                    f"(expected the folder {folder})"
                )
            _apply(folder, task, workdir)
            exit_code = _recorded_exit_code(folder)
        except ReplayError as exc:
            message = str(exc)
            turn_dir.stdout_path.write_bytes(b"")
            turn_dir.stderr_path.write_text(f"consort: {message}\n", encoding="utf-8")
            return TurnOutcome(
                1,
                time.monotonic() - started,
                turn_dir.stdout_path,
                turn_dir.stderr_path,
                error=message,
                sandbox=SandboxUse.NO_PROCESS,
            )
        _copy_or_write(folder / "stdout", turn_dir.stdout_path, f"replayed {key} from {folder}\n")
        _copy_or_write(folder / "stderr", turn_dir.stderr_path, "")
        return TurnOutcome(
            exit_code,
            time.monotonic() - started,
            turn_dir.stdout_path,
            turn_dir.stderr_path,
            sandbox=SandboxUse.NO_PROCESS,  # Consort wrote the recorded files; nothing ran
        )


def _apply(folder: Path, task: Task, workdir: Path) -> None:
    for relative in _recorded_deletions(folder):
        target = _inside(workdir, relative, folder)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)
    files = folder / FILES_DIR
    if files.is_dir():
        for source in sorted(recorded_files(files)):
            relative = source.relative_to(files).as_posix()
            target = _inside(workdir, relative, folder)
            if target.is_symlink():
                target.unlink()  # write the file itself, never through a link
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
    outputs = folder / OUTPUTS_DIR
    if outputs.is_dir():
        for source in sorted(outputs.iterdir()):
            if source.name not in task.outputs:
                expected = ", ".join(sorted(task.outputs)) or "none"
                raise ReplayError(
                    f"recorded output {source.name!r} in {folder} is not an output of this "
                    f"turn (its outputs: {expected})"
                )
            destination = task.outputs[source.name]
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)


def _recorded_deletions(folder: Path) -> list[str]:
    path = folder / DELETE_FILE
    if not path.exists():
        return []
    try:
        paths = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReplayError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ReplayError(f"{path} must be a JSON list of relative paths")
    return paths


def _inside(workdir: Path, relative: str, folder: Path) -> Path:
    """workdir/relative, refusing any path that would leave the working tree."""
    pure = PurePosixPath(relative)
    if not relative or pure.is_absolute() or ".." in pure.parts or pure == PurePosixPath("."):
        raise ReplayError(f"path {relative!r} in {folder} must be relative to the working tree")
    target = workdir / pure
    root = workdir.resolve()
    parent = target.parent.resolve()
    if parent != root and root not in parent.parents:
        raise ReplayError(f"path {relative!r} in {folder} leads outside the working tree")
    return target


# An installed copy of the playbook gains byte-code caches (pip compiles every `.py` it
# installs); they were never part of a recorded turn.
_CACHE_DIR = "__pycache__"


def recorded_files(root: Path) -> list[Path]:
    """The files a recorded turn wrote, below `root`, without byte-code caches."""
    found: list[Path] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [name for name in dirs if name != _CACHE_DIR]
        found.extend(Path(folder) / name for name in names if not name.endswith(".pyc"))
    return found


def _recorded_exit_code(folder: Path) -> int:
    path = folder / EXIT_CODE_FILE
    if not path.exists():
        return 0
    text = path.read_text(encoding="utf-8").strip()
    try:
        return int(text)
    except ValueError as exc:
        raise ReplayError(f"{path} must hold an integer exit code, not {text!r}") from exc


def _copy_or_write(source: Path, destination: Path, default: str) -> None:
    if source.is_file():
        shutil.copyfile(source, destination)
    else:
        destination.write_text(default, encoding="utf-8")
