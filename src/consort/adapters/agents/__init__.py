"""Agents: the protocol every role agent speaks, and the adapters that run them.

- `task`     task.json (`Task`), roles and steps, the turn folder and its result.json
- `base`     the `Adapter` protocol, `TurnOutcome`, and the agent's minimal environment
- `command`  any program as an agent (the protocol's reference adapter)
- `replay`   recorded turns played back, for deterministic runs
- `config`   the adapter each role uses, from consort.toml's [agents] table
"""

from consort.adapters.agents.base import Adapter, KillReason, TurnOutcome, build_agent_env
from consort.adapters.agents.task import Task, TurnDir, TurnResult
from consort.core.vocabulary import Role, Step

__all__ = [
    "Adapter",
    "KillReason",
    "Role",
    "Step",
    "Task",
    "TurnDir",
    "TurnOutcome",
    "TurnResult",
    "build_agent_env",
]
