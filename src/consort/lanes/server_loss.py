"""A run that lost the database server is repeated, and the ledger says so; the restarts one
step may have are counted there, so that no number of drives makes them unbounded.

Whether the server was lost is Consort's own look at the server (`adapters.db.liveness`), never
the run's output. Code under test that cannot reach the server (it is sandboxed in its own PID
namespace, with its own scratch role) cannot fake a loss; where it could cause one (a run a
person left unsandboxed), the bound holds: after `MAX_SERVER_RESTARTS` restarts of one step's
attempt, the loss counts as the attempt's failure.
"""

from __future__ import annotations

from collections.abc import Callable

from consort.adapters.tdd.runner import MAX_SERVER_RESTARTS, ServerLoss, ServerLossHook
from consort.core.ledger import Actor, EventType, Ledger
from consort.core.ledger.events import ServerRestarted


def recorded_restarts(
    ledger: Ledger,
    subject: str,
    step: str,
    *,
    attempt: int | None = None,
    progress: Callable[[str], None] = lambda _text: None,
) -> ServerLossHook:
    """Allow a restart while this step's attempt has had fewer than the bound, recording each."""

    def allow(loss: ServerLoss) -> bool:
        before = sum(
            1
            for event in ledger.read()
            if event.type is EventType.SERVER_RESTARTED
            and event.subject == subject
            and event.data.get("step") == step
            and event.data.get("attempt") == attempt
        )
        if before >= MAX_SERVER_RESTARTS:
            progress(f"  {loss.reason} during {loss.run} again: the restarts allowed are used up")
            return False
        ledger.record(
            ServerRestarted(
                run=loss.run, reason=loss.reason, restart=before + 1, step=step, attempt=attempt
            ),
            Actor.ORCHESTRATOR,
            subject,
        )
        progress(
            f"  {loss.reason} during {loss.run}: Consort's failure, not the agent's; starting it "
            f"again and repeating the run (restart {before + 1} of {MAX_SERVER_RESTARTS}, no "
            "attempt used)"
        )
        return True

    return allow
