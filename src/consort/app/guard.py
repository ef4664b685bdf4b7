"""`consort guard`: the coding agents' PreToolUse hook, deciding one tool call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GuardDecision:
    allowed: bool
    reason: str  # why a call is refused; empty when allowed
    exit_code: int  # what the hook exits with: 0 allows the call, 2 refuses it

    def as_json(self) -> dict[str, object]:
        return {"allowed": self.allowed, "reason": self.reason, "exit_code": self.exit_code}


def decide(
    hook_input: str,
    env: Mapping[str, str],
    tree: Path | None = None,
    *,
    terminal_programs: bool = True,
) -> GuardDecision:
    """Allow or refuse the tool call described by the hook's JSON input, for the turn named by
    `env` ($CONSORT_TASK); `tree` is the turn's working tree (default: the hook's cwd).
    `terminal_programs=False` also refuses commands that start an interactive program."""
    from consort.adapters.guard import guard

    decision = guard(hook_input, env, tree, terminal_programs=terminal_programs)
    return GuardDecision(decision.allowed, decision.reason, decision.exit_code)
