"""A scripted model that replays a recorded playbook (the `replay` adapter's folders) as tool
calls, so that a real agent CLI does, with its own tools, what the recording did.

For each turn it reads the task file the prompt names, finds the recorded turn under the same key
as the replay adapter (`<feature>/<story>/<item>/<step>/<attempt>`, `<feature>/<step>`), and
answers, for Claude Code: first a Read of every file it will overwrite (Claude Code refuses to
overwrite a file it has not read), then a Write of every recorded file and output, then the
recording's stdout as its last words; for Codex: one apply_patch that adds each new file and
rewrites every line of each existing one, the same for outputs, then the stdout. Recorded
deletions become an `rm -rf` through the shell tool.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from consort.adapters.agents.replay import recorded_files, replay_key
from consort.adapters.agents.task import Task
from tests.e2e.scripted_model import Answer, Block, Call, Conversation, Custom, Say


@dataclass(frozen=True)
class RecordedTurn:
    key: str
    writes: dict[str, str]  # absolute path -> content
    deletes: list[str]  # absolute paths
    words: str


@dataclass
class PlaybookModel:
    playbook: Path
    served: list[str] = field(default_factory=list)  # the keys replayed, in order
    missing: list[str] = field(default_factory=list)  # keys asked for and not recorded

    def __call__(self, conversation: Conversation) -> Answer:
        turn = self._turn(conversation)
        if turn is None:
            return [Say("There is no recording for this turn.")]
        if conversation.protocol == "anthropic":
            return self._claude(conversation.index, turn)
        return self._codex(conversation.index, turn)

    def _turn(self, conversation: Conversation) -> RecordedTurn | None:
        task_file, cwd = conversation.task_file, conversation.cwd
        if task_file is None or cwd is None:
            return None
        task = Task.load(Path(task_file))
        key = str(replay_key(task))
        folder = self.playbook / key
        if not folder.is_dir():
            if conversation.index == 0:
                self.missing.append(key)
            return None
        if conversation.index == 0:
            self.served.append(key)
        writes: dict[str, str] = {}
        files = folder / "files"
        for source in sorted(recorded_files(files)) if files.is_dir() else []:
            writes[str(Path(cwd) / source.relative_to(files))] = source.read_text()
        outputs = folder / "outputs"
        for source in sorted(outputs.iterdir()) if outputs.is_dir() else []:
            writes[str(task.outputs[source.name])] = source.read_text()
        deletes_file = folder / "delete.json"
        deletes = json.loads(deletes_file.read_text()) if deletes_file.is_file() else []
        stdout = folder / "stdout"
        words = stdout.read_text().strip() if stdout.is_file() else f"Replayed {key}."
        return RecordedTurn(key, writes, [str(Path(cwd) / d) for d in deletes], words)

    def _claude(self, index: int, turn: RecordedTurn) -> Answer:
        existing = [path for path in turn.writes if Path(path).is_file()]
        steps: list[list[Block]] = []
        if turn.deletes:
            steps.append([Call("Bash", {"command": "rm -rf " + " ".join(turn.deletes)})])
        if existing:
            steps.append([Call("Read", {"file_path": path}) for path in existing])
        writes: list[Block] = [
            Call("Write", {"file_path": path, "content": content})
            for path, content in turn.writes.items()
        ]
        if writes:
            steps.append(writes)
        steps.append([Say(turn.words)])
        return steps[min(index, len(steps) - 1)]

    def _codex(self, index: int, turn: RecordedTurn) -> Answer:
        steps: list[list[Block]] = []
        if turn.deletes:
            steps.append([Call("exec_command", {"cmd": "rm -rf " + " ".join(turn.deletes)})])
        if turn.writes:
            steps.append([Custom("apply_patch", codex_patch(turn.writes))])
        steps.append([Say(turn.words)])
        return steps[min(index, len(steps) - 1)]


def codex_patch(writes: dict[str, str]) -> str:
    """An apply_patch envelope that leaves each file with exactly `content`: an Add for a new
    file, an Update replacing every line for an existing one (one operation per file: Codex
    refuses a patch with two on the same path)."""
    lines = ["*** Begin Patch"]
    for path, content in writes.items():
        new = [f"+{line}" for line in content.splitlines()]
        target = Path(path)
        if target.is_file():
            old = [f"-{line}" for line in target.read_text().splitlines()]
            lines += [f"*** Update File: {path}", "@@", *old, *new]
        else:
            lines += [f"*** Add File: {path}", *new]
    lines.append("*** End Patch")
    return "\n".join(lines) + "\n"
